package objects

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/vinfer/vinfer/analytics"
)

// Rules are a stream's object rules, embedded in its configuration (YAML and JSON):
//
//	groups: {vehicle: [car, truck, bus, motorbike]}
//	group_nms_iou: 0.6
//	filters:
//	  - {classes: [vehicle], min_area: 0.0005, max_aspect: 4, normalized: true}
//	masks:
//	  - {name: billboard, polygon: [[0,0],[200,0],[200,90],[0,90]]}
type Rules struct {
	// Groups name sets of class labels that count as one kind of object. A label belongs to at
	// most one group; a group's name is no label (of the model: Check; of a group: Validate). Zones, lines, filters,
	// masks and evidence accept a group's name wherever they accept a class.
	Groups map[string][]string `yaml:"groups,omitempty" json:"groups,omitempty"`
	// GroupNMSIoU is the IoU above which, inside a group, the lower-scored of two detections
	// is dropped (0…1); 0: DefaultGroupNMSIoU.
	GroupNMSIoU float64 `yaml:"group_nms_iou,omitempty" json:"group_nms_iou,omitempty"`
	// Filters drop detections by box size and shape.
	Filters []Filter `yaml:"filters,omitempty" json:"filters,omitempty"`
	// Masks are polygons where detections are ignored.
	Masks []Mask `yaml:"masks,omitempty" json:"masks,omitempty"`
}

// DefaultGroupNMSIoU is Rules.GroupNMSIoU's default.
const DefaultGroupNMSIoU = 0.5

// Filter keeps only the detections of its classes whose box is within its bounds; a bound at 0
// is unset. Area is w·h, aspect w/h.
type Filter struct {
	// Classes are the labels or group names filtered; empty: all.
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// MinArea and MaxArea bound the box's area: square pixels of the frame, or fractions 0…1
	// of the frame's area when Normalized.
	MinArea float64 `yaml:"min_area,omitempty" json:"min_area,omitempty"`
	MaxArea float64 `yaml:"max_area,omitempty" json:"max_area,omitempty"`
	// MinAspect and MaxAspect bound the box's width over its height (in frame pixels).
	MinAspect float64 `yaml:"min_aspect,omitempty" json:"min_aspect,omitempty"`
	MaxAspect float64 `yaml:"max_aspect,omitempty" json:"max_aspect,omitempty"`
	// Normalized: the areas are fractions of the frame's area.
	Normalized bool `yaml:"normalized,omitempty" json:"normalized,omitempty"`
}

// Mask is a polygon where the detections of its classes are ignored: those whose anchor point
// is inside.
type Mask struct {
	// Name identifies the mask in messages (optional).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Polygon has at least 3 vertices; it closes by itself.
	Polygon []analytics.Point `yaml:"polygon" json:"polygon"`
	// Normalized: the coordinates are fractions 0…1 of the frame's width and height.
	Normalized bool `yaml:"normalized,omitempty" json:"normalized,omitempty"`
	// Classes are the labels or group names masked; empty: all.
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// Anchor is the point of the box tested; "": center.
	Anchor analytics.Anchor `yaml:"anchor,omitempty" json:"anchor,omitempty"`
}

// Bounds of Rules.
const (
	MaxGroups     = 64
	MaxGroupSize  = 256
	MaxFilters    = 64
	MaxMasks      = 64
	MaxMaskPoints = 256
	maxName       = 64
)

// Errors of Validate and Check, wrapped with the field they concern, e.g.
// `groups.vehicle[2] "car": label in two groups (also groups.auto[0])`.
var (
	ErrName         = errors.New("must be 1–64 printable bytes")
	ErrTwoGroups    = errors.New("label in two groups")
	ErrGroupIsLabel = errors.New("group name is a label of another group")
	ErrTooMany      = errors.New("too many")
	ErrRange        = errors.New("out of range")
	ErrPolygon      = errors.New("polygon needs 3 to 256 finite points")
	ErrAnchor       = errors.New("unknown anchor")
	ErrUnknownClass = errors.New("is neither a label of the model nor a group")
)

// Empty reports whether r has no rule (the Stage would pass detections through).
func (r *Rules) Empty() bool {
	return len(r.Groups) == 0 && len(r.Filters) == 0 && len(r.Masks) == 0
}

// GroupNames returns the groups' names, sorted.
func (r *Rules) GroupNames() []string {
	names := make([]string, 0, len(r.Groups))
	for g := range r.Groups {
		names = append(names, g)
	}
	sort.Strings(names)
	return names
}

// Validate checks what it can without the model's labels: names printable and bounded, each
// label in at most one group, no group named after another group's label, bounds ordered and
// finite (normalized areas within 0…1), masks of 3 to 256 finite points (normalized ones
// within 0…1) with a known anchor, and the counts within MaxGroups, MaxGroupSize, MaxFilters
// and MaxMasks. It returns every problem, joined; each wraps one of the Err values.
func (r *Rules) Validate() error {
	var errs []error
	bad := func(s string) bool {
		return s == "" || len(s) > maxName || strings.TrimSpace(s) != s || strings.IndexFunc(s, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0
	}
	if len(r.Groups) > MaxGroups {
		errs = append(errs, fmt.Errorf("groups: %d: %w (at most %d)", len(r.Groups), ErrTooMany, MaxGroups))
	}
	owner := map[string]string{}
	for _, g := range r.GroupNames() {
		labels := r.Groups[g]
		if bad(g) {
			errs = append(errs, fmt.Errorf("groups: name %.40q: %w", g, ErrName))
		}
		if len(labels) == 0 || len(labels) > MaxGroupSize {
			errs = append(errs, fmt.Errorf("groups.%s: %d labels: %w (1…%d)", g, len(labels), ErrRange, MaxGroupSize))
		}
		for i, l := range labels {
			field := fmt.Sprintf("groups.%s[%d]", g, i)
			switch prev, dup := owner[l]; {
			case bad(l):
				errs = append(errs, fmt.Errorf("%s: label %.40q: %w", field, l, ErrName))
			case dup:
				errs = append(errs, fmt.Errorf("%s %q: %w (also %s)", field, l, ErrTwoGroups, prev))
			default:
				owner[l] = field
			}
		}
	}
	for g := range r.Groups {
		if f, ok := owner[g]; ok {
			errs = append(errs, fmt.Errorf("groups.%s: %w (%s)", g, ErrGroupIsLabel, f))
		}
	}
	if !(r.GroupNMSIoU >= 0 && r.GroupNMSIoU <= 1) {
		errs = append(errs, fmt.Errorf("group_nms_iou %v: %w (0…1)", r.GroupNMSIoU, ErrRange))
	}
	classes := func(field string, cs []string) {
		for k, c := range cs {
			if bad(c) {
				errs = append(errs, fmt.Errorf("%s: classes[%d] %.40q: %w", field, k, c, ErrName))
			}
		}
	}
	if len(r.Filters) > MaxFilters {
		errs = append(errs, fmt.Errorf("filters: %d: %w (at most %d)", len(r.Filters), ErrTooMany, MaxFilters))
	}
	for i, f := range r.Filters {
		field := fmt.Sprintf("filters[%d]", i)
		classes(field, f.Classes)
		maxArea := math.MaxFloat64
		if f.Normalized {
			maxArea = 1
		}
		for _, b := range []struct {
			name     string
			lo, hi   float64
			ceilings float64
		}{{"area", f.MinArea, f.MaxArea, maxArea}, {"aspect", f.MinAspect, f.MaxAspect, math.MaxFloat64}} {
			switch {
			case !(b.lo >= 0 && b.lo <= b.ceilings) || !(b.hi >= 0 && b.hi <= b.ceilings):
				errs = append(errs, fmt.Errorf("%s: min_%s %v, max_%s %v: %w (finite, ≥ 0, normalized areas ≤ 1)", field, b.name, b.lo, b.name, b.hi, ErrRange))
			case b.hi > 0 && b.lo > b.hi:
				errs = append(errs, fmt.Errorf("%s: min_%s %v above max_%s %v: %w", field, b.name, b.lo, b.name, b.hi, ErrRange))
			}
		}
	}
	if len(r.Masks) > MaxMasks {
		errs = append(errs, fmt.Errorf("masks: %d: %w (at most %d)", len(r.Masks), ErrTooMany, MaxMasks))
	}
	for i, m := range r.Masks {
		field := fmt.Sprintf("masks[%d]", i)
		if m.Name != "" {
			field = fmt.Sprintf("masks[%d] %.40q", i, m.Name)
		}
		classes(field, m.Classes)
		if _, _, ok := maskAnchor(m.Anchor); !ok {
			errs = append(errs, fmt.Errorf("%s: anchor %.40q: %w", field, m.Anchor, ErrAnchor))
		}
		ok := len(m.Polygon) >= 3 && len(m.Polygon) <= MaxMaskPoints
		for _, p := range m.Polygon {
			for _, v := range p {
				ok = ok && v >= 0 && v < math.MaxFloat32 && (!m.Normalized || v <= 1)
			}
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %d points: %w (not negative; normalized within 0…1)", field, len(m.Polygon), ErrPolygon))
		}
	}
	return errors.Join(errs...)
}

// Check checks the class names of r against a model's labels (nil: skipped): every group's
// labels among them and its name not, and every filter's and mask's classes among the labels
// or the group names. Errors
// wrap ErrUnknownClass and name the field, joined.
func (r *Rules) Check(labels []string) error {
	if labels == nil {
		return nil
	}
	var errs []error
	for _, g := range r.GroupNames() {
		if slices.Contains(labels, g) {
			errs = append(errs, fmt.Errorf("groups.%s: is a label of the model: name the group otherwise", g))
		}
		for i, l := range r.Groups[g] {
			if !slices.Contains(labels, l) {
				errs = append(errs, fmt.Errorf("groups.%s[%d] %q: is not a label of the model", g, i, l))
			}
		}
	}
	known := func(field string, cs []string) {
		for k, c := range cs {
			if _, group := r.Groups[c]; !group && !slices.Contains(labels, c) {
				errs = append(errs, fmt.Errorf("%s: classes[%d] %q: %w", field, k, c, ErrUnknownClass))
			}
		}
	}
	for i, f := range r.Filters {
		known(fmt.Sprintf("filters[%d]", i), f.Classes)
	}
	for i, m := range r.Masks {
		known(fmt.Sprintf("masks[%d]", i), m.Classes)
	}
	return errors.Join(errs...)
}

// Names returns labels with the groups' names added: the class names zones, lines and evidence
// may use.
func (r *Rules) Names(labels []string) []string {
	if labels == nil {
		return nil
	}
	return append(slices.Clip(labels), r.GroupNames()...)
}

// maskAnchor returns a mask anchor's fractions of the box ("" is the centre).
func maskAnchor(a analytics.Anchor) (fx, fy float64, ok bool) {
	if a == "" {
		return 0.5, 0.5, true
	}
	return a.Fractions()
}
