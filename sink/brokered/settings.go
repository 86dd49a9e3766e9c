package brokered

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/outbox"
)

// Carry is what a sink carries: events, detections or both.
type Carry uint8

// Carry values; the zero value is CarryEvents.
const (
	CarryEvents Carry = iota
	CarryDetections
	CarryBoth
)

var carryWords = [...]string{"events", "detections", "both"}

// ErrCarry is returned for a carry word other than events, detections or both.
var ErrCarry = errors.New("carry must be events, detections or both")

func (c Carry) String() string { return carryWords[c] }

// UnmarshalText decodes events|detections|both.
func (c *Carry) UnmarshalText(b []byte) error {
	for i, w := range carryWords {
		if w == string(b) {
			*c = Carry(i)
			return nil
		}
	}
	return fmt.Errorf("%q: %w", b, ErrCarry)
}

// MarshalText encodes the word.
func (c Carry) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Events reports whether the sink carries events; Detections whether it carries detections.
func (c Carry) Events() bool     { return c != CarryDetections }
func (c Carry) Detections() bool { return c != CarryEvents }

// Fsync is an outbox durability policy written as always|interval|never.
type Fsync outbox.FsyncPolicy

// ErrFsync is returned for an fsync word other than always, interval or never.
var ErrFsync = errors.New("fsync must be always, interval or never")

// UnmarshalText decodes always|interval|never.
func (f *Fsync) UnmarshalText(b []byte) error {
	switch string(b) {
	case "always":
		*f = Fsync(outbox.FsyncAlways)
	case "interval":
		*f = Fsync(outbox.FsyncInterval)
	case "never":
		*f = Fsync(outbox.FsyncNever)
	default:
		return fmt.Errorf("%q: %w", b, ErrFsync)
	}
	return nil
}

// OutboxSettings are a sink's outbox settings (docs/outbox.md); zero values take the outbox's
// defaults.
type OutboxSettings struct {
	// Dir is the outbox directory (default <data dir>/outbox/<name>); relative to the
	// configuration file's directory.
	Dir string `yaml:"dir"`
	// MaxBytes bounds the outbox's size in bytes (default 1 GiB); the oldest records are
	// dropped, counted, beyond it.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxAge drops older records (default none).
	MaxAge config.Duration `yaml:"max_age"`
	// Fsync is always, interval (the default) or never.
	Fsync Fsync `yaml:"fsync"`
	// FsyncEvery is the fsync interval (default 10ms).
	FsyncEvery config.Duration `yaml:"fsync_every"`
}

// Settings are what every broker sink has besides its client settings; a broker's settings
// struct embeds them inline.
type Settings struct {
	// Name names the sink's outbox consumer, its default outbox directory and its metrics
	// label (default the sink's type); 1–64 letters, digits, '.', '_' or '-', unique among
	// the sinks.
	Name string `yaml:"name"`
	// Carry is events (the default), detections or both.
	Carry Carry `yaml:"carry"`
	// DetectionsEvery sends every Nth result with detections of each stream (default 1: all).
	DetectionsEvery int `yaml:"detections_every"`
	// Outbox configures the sink's durable queue.
	Outbox OutboxSettings `yaml:"outbox"`
	// Timeout bounds one delivery attempt (default 10s).
	Timeout config.Duration `yaml:"timeout"`
	// MinBackoff and MaxBackoff bound the wait between failed attempts (defaults 100ms, 30s).
	MinBackoff config.Duration `yaml:"min_backoff"`
	MaxBackoff config.Duration `yaml:"max_backoff"`
	// MaxBatch bounds the records per delivery attempt (default 256).
	MaxBatch int `yaml:"max_batch"`
	// Counts, set by a broker package (not configurable here), adds a KindCount record per
	// zone or line whose counts the events of a Write changed, after that Write's events.
	Counts bool `yaml:"-"`
	// DrainTimeout is how long Close waits for undelivered records before stopping (default
	// 5s); what is left stays in the outbox for the next run.
	DrainTimeout config.Duration `yaml:"drain_timeout"`
}

// DataDir is the directory under which sinks keep their outboxes when outbox.dir is not set:
// vinfer-data beside the configuration file (output.data_dir).
const DataDir = "vinfer-data"

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ErrName is returned for a sink name that is not 1–64 letters, digits, '.', '_' or '-'.
var ErrName = errors.New("name must be 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit")

// ErrNegative is returned for a count, size or duration below zero.
var ErrNegative = errors.New("must not be negative")

// check validates s and fills defaults; typ is the sink's type.
func (s *Settings) check(typ string) error {
	if s.Name == "" {
		s.Name = typ
	}
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("name %q: %w", s.Name, ErrName)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"detections_every", int64(s.DetectionsEvery)}, {"max_batch", int64(s.MaxBatch)},
		{"outbox.max_bytes", s.Outbox.MaxBytes}, {"outbox.max_age", int64(s.Outbox.MaxAge)},
		{"outbox.fsync_every", int64(s.Outbox.FsyncEvery)}, {"timeout", int64(s.Timeout)},
		{"min_backoff", int64(s.MinBackoff)}, {"max_backoff", int64(s.MaxBackoff)},
		{"drain_timeout", int64(s.DrainTimeout)},
	} {
		if f.v < 0 {
			return &config.FieldError{Field: f.name, Err: ErrNegative}
		}
	}
	if s.DetectionsEvery == 0 {
		s.DetectionsEvery = 1
	}
	if s.Timeout == 0 {
		s.Timeout = config.Duration(10 * time.Second)
	}
	if s.DrainTimeout == 0 {
		s.DrainTimeout = config.Duration(5 * time.Second)
	}
	return nil
}

// outboxDir returns the sink's outbox directory, resolved against dir.
func (s *Settings) outboxDir(dir, dataDir string) string {
	d := s.Outbox.Dir
	if d == "" {
		if dataDir == "" {
			dataDir = DataDir
		}
		d = filepath.Join(dataDir, "outbox", s.Name)
	}
	return Resolve(dir, d)
}

// Resolve returns path resolved against dir when it is relative (and dir is set).
func Resolve(dir, path string) string {
	if path == "" || filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}
