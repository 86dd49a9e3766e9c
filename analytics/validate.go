package analytics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Errors of Validate and Check, wrapped with the field they concern, e.g.
// `zones[1] "queue": polygon: self-intersecting: edges 0 and 2 cross`.
var (
	ErrEmpty            = errors.New("empty")
	ErrName             = errors.New("must be printable and at most 64 bytes")
	ErrTooLong          = errors.New("is longer than an hour (MaxRetention)")
	ErrDuplicateName    = errors.New("duplicate name")
	ErrTooFewPoints     = errors.New("fewer than 3 points")
	ErrSelfIntersecting = errors.New("self-intersecting")
	ErrDegenerate       = errors.New("degenerate")
	ErrLinePoints       = errors.New("want exactly 2 points")
	ErrZeroLength       = errors.New("zero length")
	ErrNegative         = errors.New("negative")
	ErrAnchor           = errors.New("unknown anchor")
	ErrCoordinate       = errors.New("bad coordinate")
	ErrOutsideFrame     = errors.New("outside the frame")
	ErrUnknownClass     = errors.New("unknown class")
)

// maxName bounds zone and line names (they are metric label values and event fields).
const maxName = 64

// MaxRetention bounds Config.Retention: state of unseen tracks is kept no longer.
const MaxRetention = time.Hour

// Validate checks what it can without the frame size or the model's labels: names present and
// unique among zones and lines, polygons of at least 3 distinct points with an area and no
// self-intersection, lines of 2 distinct points, known anchors, no negative inertia, loiter,
// margin or retention, finite coordinates (normalized ones within 0…1, pixel ones not
// negative). It returns every problem found, joined; each wraps one of the Err values.
func (c *Config) Validate() error {
	var errs []error
	names := map[string]string{}
	name := func(field, n string) {
		if strings.TrimSpace(n) == "" {
			errs = append(errs, fmt.Errorf("%s: name: %w", field, ErrEmpty))
			return
		}
		if len(n) > maxName || strings.IndexFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			errs = append(errs, fmt.Errorf("%s: name %.40q: %w", field, n, ErrName))
			return
		}
		if prev, ok := names[n]; ok {
			errs = append(errs, fmt.Errorf("%s: name: %w %q (also %s)", field, ErrDuplicateName, n, prev))
			return
		}
		names[n] = field
	}
	for i := range c.Zones {
		z := &c.Zones[i]
		field := fmt.Sprintf("zones[%d]", i)
		name(field, z.Name)
		if z.Name != "" {
			field = fmt.Sprintf("zones[%d] %q", i, z.Name)
		}
		errs = append(errs, checkCommon(field, z.Polygon, "polygon", z.Normalized, z.Classes, z.Anchor, z.Inertia)...)
		if z.Loiter < 0 {
			errs = append(errs, fmt.Errorf("%s: loiter: %w", field, ErrNegative))
		}
		if err := checkPolygon(z.Polygon); err != nil {
			errs = append(errs, fmt.Errorf("%s: polygon: %w", field, err))
		}
	}
	for i := range c.Lines {
		l := &c.Lines[i]
		field := fmt.Sprintf("lines[%d]", i)
		name(field, l.Name)
		if l.Name != "" {
			field = fmt.Sprintf("lines[%d] %q", i, l.Name)
		}
		errs = append(errs, checkCommon(field, l.Points, "points", l.Normalized, l.Classes, l.Anchor, l.Inertia)...)
		if l.Margin != nil && !(*l.Margin >= 0 && !math.IsInf(*l.Margin, 1)) {
			errs = append(errs, fmt.Errorf("%s: margin: %w (%v)", field, ErrNegative, *l.Margin))
		}
		switch {
		case len(l.Points) != 2:
			errs = append(errs, fmt.Errorf("%s: points: %w, got %d", field, ErrLinePoints, len(l.Points)))
		case l.Points[0] == l.Points[1]:
			errs = append(errs, fmt.Errorf("%s: points: %w (both %v)", field, ErrZeroLength, l.Points[0]))
		}
	}
	if time.Duration(c.Retention) > MaxRetention {
		errs = append(errs, fmt.Errorf("retention %v: %w", time.Duration(c.Retention), ErrTooLong))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("retention: %w", ErrNegative))
	}
	return errors.Join(errs...)
}

// checkCommon checks what zones and lines share.
func checkCommon(field string, pts []Point, ptsName string, normalized bool, classes []string, anchor Anchor, inertia int) []error {
	var errs []error
	if _, _, ok := anchor.fractions(); !ok {
		valid := make([]string, len(Anchors))
		for i, a := range Anchors {
			valid[i] = string(a)
		}
		errs = append(errs, fmt.Errorf("%s: anchor: %w %q (want one of %s)", field, ErrAnchor, anchor, strings.Join(valid, ", ")))
	}
	if inertia < 0 {
		errs = append(errs, fmt.Errorf("%s: inertia: %w (%d)", field, ErrNegative, inertia))
	}
	for k, cl := range classes {
		if cl == "" {
			errs = append(errs, fmt.Errorf("%s: classes[%d]: %w", field, k, ErrEmpty))
		}
	}
	small := len(pts) > 0
	for k, p := range pts {
		for _, v := range p {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				errs = append(errs, fmt.Errorf("%s: %s[%d]: %w %v", field, ptsName, k, ErrCoordinate, p))
			case normalized && (v < 0 || v > 1):
				errs = append(errs, fmt.Errorf("%s: %s[%d]: %w %v: normalized coordinates are within 0…1", field, ptsName, k, ErrCoordinate, p))
			case !normalized && v < 0:
				errs = append(errs, fmt.Errorf("%s: %s[%d]: %w %v", field, ptsName, k, ErrOutsideFrame, p))
			}
			if v > 1 {
				small = false
			}
		}
	}
	if small && !normalized {
		errs = append(errs, fmt.Errorf("%s: %s: %w: every coordinate within 0…1 but normalized is false; set normalized: true for fractions of the frame", field, ptsName, ErrCoordinate))
	}
	return errs
}

// checkPolygon checks the shape of a zone's polygon (coordinates are checked elsewhere).
func checkPolygon(p []Point) error {
	if len(p) < 3 {
		return fmt.Errorf("%w, got %d", ErrTooFewPoints, len(p))
	}
	poly := make([]vec, len(p))
	for i, q := range p {
		poly[i] = vec{q[0], q[1]}
		if math.IsNaN(q[0]) || math.IsNaN(q[1]) || math.IsInf(q[0], 0) || math.IsInf(q[1], 0) {
			return nil // reported as a coordinate error
		}
	}
	for i := range poly {
		j := (i + 1) % len(poly)
		if poly[i] == poly[j] {
			return fmt.Errorf("%w: point %d repeats point %d", ErrDegenerate, j, i)
		}
	}
	if i, j, ok := selfIntersection(poly); ok {
		return fmt.Errorf("%w: edges %d and %d cross", ErrSelfIntersecting, i, j)
	}
	if area2(poly) == 0 {
		return fmt.Errorf("%w: zero area", ErrDegenerate)
	}
	return nil
}

// Check checks c against a stream's frame size and its model's labels: pixel coordinates within
// width×height (skipped when either is 0), class names among labels (skipped when labels is
// nil). Call Validate first. Errors wrap ErrOutsideFrame or ErrUnknownClass, joined.
func (c *Config) Check(width, height int, labels []string) error {
	var errs []error
	frame := func(field, ptsName string, pts []Point, normalized bool) {
		if normalized || width <= 0 || height <= 0 {
			return
		}
		for k, p := range pts {
			if p[0] > float64(width) || p[1] > float64(height) {
				errs = append(errs, fmt.Errorf("%s: %s[%d]: %w %v of %d×%d", field, ptsName, k, ErrOutsideFrame, p, width, height))
			}
		}
	}
	class := func(field string, classes []string) {
		if labels == nil {
			return
		}
		for k, cl := range classes {
			if !slices.Contains(labels, cl) {
				errs = append(errs, fmt.Errorf("%s: classes[%d]: %w %q", field, k, ErrUnknownClass, cl))
			}
		}
	}
	for i := range c.Zones {
		z := &c.Zones[i]
		field := fmt.Sprintf("zones[%d] %q", i, z.Name)
		frame(field, "polygon", z.Polygon, z.Normalized)
		class(field, z.Classes)
	}
	for i := range c.Lines {
		l := &c.Lines[i]
		field := fmt.Sprintf("lines[%d] %q", i, l.Name)
		frame(field, "points", l.Points, l.Normalized)
		class(field, l.Classes)
	}
	return errors.Join(errs...)
}
