package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Sources limits what stream declarations may open. Streams written in the configuration file
// are trusted; streams added through the API are held to AllowPaths.
type Sources struct {
	// AllowPaths are the directories (relative to the config file) whose files streams added
	// through the API may open, as video or as an rtp sdp= file. Default: the config file's
	// directory and vinfer's assets directory.
	AllowPaths []string `yaml:"allow_paths,omitempty" json:"allow_paths,omitempty"`
	// OpenTimeout bounds opening one source (probing a file, a network handshake); default 10s.
	OpenTimeout Duration `yaml:"open_timeout,omitempty" json:"open_timeout,omitempty"`
	// MaxOpening bounds the sources being opened at once; further adds are refused (busy)
	// until one finishes. Default 8.
	MaxOpening int `yaml:"max_opening,omitempty" json:"max_opening,omitempty"`
	// MaxStreams bounds the streams running at once. Default 256.
	MaxStreams int `yaml:"max_streams,omitempty" json:"max_streams,omitempty"`
	// Retry is how a configured stream whose source cannot be opened is tried again.
	Retry Retry `yaml:"retry,omitempty" json:"retry,omitempty"`
	// Degraded is when a running stream is reported degraded (inference behind its source).
	Degraded Degraded `yaml:"degraded,omitempty" json:"degraded,omitempty"`
}

// Retry is the backoff between attempts to open a configured stream's source: Initial after
// the first failure, doubling up to Max. Defaults 1s and 1m.
type Retry struct {
	Initial Duration `yaml:"initial,omitempty" json:"initial,omitempty"`
	Max     Duration `yaml:"max,omitempty" json:"max,omitempty"`
}

// Degraded is the overload threshold: a stream whose frames dropped for inference being behind
// (queue_full) exceed DropRatio of its decoded frames over Window is degraded; it is running
// again once the share falls to half of DropRatio. Defaults 0.2 and 10s.
type Degraded struct {
	DropRatio float64  `yaml:"drop_ratio,omitempty" json:"drop_ratio,omitempty"`
	Window    Duration `yaml:"window,omitempty" json:"window,omitempty"`
}

// Source limit defaults.
const (
	DefaultOpenTimeout  = 10 * time.Second
	DefaultMaxOpening   = 8
	DefaultMaxStreams   = 256
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = time.Minute
	DefaultDropRatio    = 0.2
	DefaultDropWindow   = 10 * time.Second
)

// ErrSources is wrapped by errors of the sources section.
var ErrSources = errors.New("sources")

// Validate checks the ranges.
func (s *Sources) Validate() error {
	var errs []error
	if s.OpenTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: open_timeout must be > 0", ErrSources))
	}
	if s.MaxOpening < 0 || s.MaxOpening > 1024 {
		errs = append(errs, fmt.Errorf("%w: max_opening must be 1…1024", ErrSources))
	}
	if s.MaxStreams < 0 {
		errs = append(errs, fmt.Errorf("%w: max_streams must be ≥ 1", ErrSources))
	}
	if s.Retry.Initial < 0 || s.Retry.Max < 0 || (s.Retry.Max > 0 && s.Retry.Max < s.Retry.Initial) {
		errs = append(errs, fmt.Errorf("%w: retry: initial and max must be > 0, max ≥ initial", ErrSources))
	}
	if s.Degraded.DropRatio < 0 || s.Degraded.DropRatio >= 1 {
		errs = append(errs, fmt.Errorf("%w: degraded: drop_ratio must be in [0, 1) (0: the default 0.2)", ErrSources))
	}
	if s.Degraded.Window < 0 || (s.Degraded.Window > 0 && time.Duration(s.Degraded.Window) < time.Second) {
		errs = append(errs, fmt.Errorf("%w: degraded: window must be ≥ 1s", ErrSources))
	}
	for _, p := range s.AllowPaths {
		if p == "" {
			errs = append(errs, fmt.Errorf("%w: allow_paths: empty path", ErrSources))
		}
	}
	return errors.Join(errs...)
}

// Timeout is OpenTimeout or its default.
func (s *Sources) Timeout() time.Duration {
	if s.OpenTimeout <= 0 {
		return DefaultOpenTimeout
	}
	return time.Duration(s.OpenTimeout)
}

// Opening is MaxOpening or its default.
func (s *Sources) Opening() int {
	if s.MaxOpening <= 0 {
		return DefaultMaxOpening
	}
	return s.MaxOpening
}

// Streams is MaxStreams or its default.
func (s *Sources) Streams() int {
	if s.MaxStreams <= 0 {
		return DefaultMaxStreams
	}
	return s.MaxStreams
}

// Backoff returns the retry delays: Retry.Initial and Retry.Max or their defaults.
func (s *Sources) Backoff() (initial, most time.Duration) {
	initial, most = time.Duration(s.Retry.Initial), time.Duration(s.Retry.Max)
	if initial <= 0 {
		initial = DefaultRetryInitial
	}
	if most <= 0 {
		most = max(DefaultRetryMax, initial)
	}
	return initial, most
}

// Overload returns the degraded threshold: Degraded.DropRatio and Degraded.Window or their
// defaults.
func (s *Sources) Overload() (ratio float64, window time.Duration) {
	ratio, window = s.Degraded.DropRatio, time.Duration(s.Degraded.Window)
	if ratio <= 0 {
		ratio = DefaultDropRatio
	}
	if window <= 0 {
		window = DefaultDropWindow
	}
	return ratio, window
}

// Roots returns the allowed directories, absolute: AllowPaths resolved against dir, or dir and
// assets (each when not empty) when AllowPaths is empty.
func (s *Sources) Roots(dir, assets string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	if len(s.AllowPaths) == 0 {
		add(dir)
		add(assets)
		return out
	}
	for _, p := range s.AllowPaths {
		add(p)
	}
	return out
}
