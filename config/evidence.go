package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Evidence configures the clips, snapshots and index kept for scene events (package evidence,
// docs/evidence.md). Absent: nothing is recorded.
type Evidence struct {
	// Dir holds the files and the index (relative to the config file).
	Dir string `yaml:"dir" json:"dir"`
	// Pre and Post are the video kept before and after an event (default 10s, 5s).
	Pre  Duration `yaml:"pre,omitempty" json:"pre,omitempty"`
	Post Duration `yaml:"post,omitempty" json:"post,omitempty"`
	// MaxClip bounds one clip that overlapping events extend (default 60s).
	MaxClip Duration `yaml:"max_clip,omitempty" json:"max_clip,omitempty"`
	// Events are the event types recorded (line.cross, zone.enter, …); empty: all.
	Events []string `yaml:"events,omitempty" json:"events,omitempty"`
	// Zones, Lines and Classes narrow the events recorded to these zone names (zone.*), line
	// names (line.cross) and labels or class groups (a stream's groups:); empty: all.
	Zones   []string `yaml:"zones,omitempty" json:"zones,omitempty"`
	Lines   []string `yaml:"lines,omitempty" json:"lines,omitempty"`
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// MaxBytesPerStream and MaxBytes cap the files of one stream and of all; MaxAge removes
	// older ones (0: no bound). MinFree keeps that much of the file system free (0: the
	// smaller of 1 GiB and 5% of the file system).
	MaxBytesPerStream ByteSize `yaml:"max_bytes_per_stream,omitempty" json:"max_bytes_per_stream,omitempty"`
	MaxBytes          ByteSize `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty"`
	MaxAge            Duration `yaml:"max_age,omitempty" json:"max_age,omitempty"`
	MinFree           ByteSize `yaml:"min_free,omitempty" json:"min_free,omitempty"`
	// Buffer bounds each stream's buffer of coded video (default 32MiB).
	Buffer ByteSize `yaml:"buffer,omitempty" json:"buffer,omitempty"`
	// Snapshots decodes each event's frame and its track's best frame into JPEGs (default true).
	Snapshots *bool `yaml:"snapshots,omitempty" json:"snapshots,omitempty"`
	// PublicURL is the origin clients reach the API at, e.g. "http://vinfer.local:8080": the
	// clip and snapshot URLs on events start with it; empty: they are paths (/api/evidence/…).
	PublicURL string `yaml:"public_url,omitempty" json:"public_url,omitempty"`
}

// ErrEvidenceDir is returned for an evidence section without dir.
var ErrEvidenceDir = errors.New("evidence: dir is required")

// Validate checks the section alone (event types are checked by the app against package
// event's).
func (e *Evidence) Validate() error {
	if e.Dir == "" {
		return ErrEvidenceDir
	}
	var errs []error
	for name, d := range map[string]Duration{"pre": e.Pre, "post": e.Post, "max_clip": e.MaxClip, "max_age": e.MaxAge} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("evidence: %s: negative", name))
		}
	}
	if e.PublicURL != "" {
		u, err := url.Parse(e.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(e.PublicURL, "\"\\ \t\n") {
			errs = append(errs, fmt.Errorf("evidence: public_url %q: write an http(s) origin such as http://vinfer.local:8080 (a path is allowed; no user, query or fragment)", e.PublicURL))
		}
	}
	return errors.Join(errs...)
}

// ByteSize is a size in bytes written as 1048576, "512KiB", "10MB", "2GiB" or "1T".
type ByteSize int64

// UnmarshalText parses a byte count with an optional SI (kB, MB, GB, TB) or binary (KiB, MiB,
// GiB, TiB) suffix; K, M, G, T alone are binary.
func (b *ByteSize) UnmarshalText(t []byte) error {
	s := strings.TrimSpace(string(t))
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || v < 0 {
		return fmt.Errorf("size %q: write e.g. 500MB, 2GiB or a number of bytes", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40}
	m, ok := mult[strings.TrimSpace(s[i:])]
	if !ok {
		return fmt.Errorf("size %q: unknown unit %q (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, s[i:])
	}
	*b = ByteSize(v * m)
	return nil
}

// MarshalText writes the count of bytes.
func (b ByteSize) MarshalText() ([]byte, error) { return strconv.AppendInt(nil, int64(b), 10), nil }
