package config

import (
	"errors"
	"fmt"
)

// Record configures continuous recording and the per-frame results log (packages record and
// reslog, docs/recording.md) of the streams that ask for it (record: true). Absent: none.
type Record struct {
	// Dir holds the segments and the results logs (relative to the config file).
	Dir string `yaml:"dir" json:"dir"`
	// Segment is a segment's length (default 1m).
	Segment Duration `yaml:"segment,omitempty" json:"segment,omitempty"`
	// MaxAge removes segments that ended longer ago (0: kept); MaxBytesPerStream and MaxBytes
	// cap the segments of one stream and of all (0: no cap); MinFree keeps that much of the
	// file system free (0: the smaller of 1 GiB and 5% of it).
	MaxAge            Duration `yaml:"max_age,omitempty" json:"max_age,omitempty"`
	MaxBytesPerStream ByteSize `yaml:"max_bytes_per_stream,omitempty" json:"max_bytes_per_stream,omitempty"`
	MaxBytes          ByteSize `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty"`
	MinFree           ByteSize `yaml:"min_free,omitempty" json:"min_free,omitempty"`
	// Buffer bounds each stream's video waiting to be written (default 32MiB).
	Buffer ByteSize `yaml:"buffer,omitempty" json:"buffer,omitempty"`
	// Results keeps the per-frame results log beside the video (default true).
	Results *bool `yaml:"results,omitempty" json:"results,omitempty"`
}

// ErrRecordDir is returned for a record section without dir.
var ErrRecordDir = errors.New("record: dir is required")

// ErrNoRecord is returned for a stream with record: true and no record section.
var ErrNoRecord = errors.New("record: true needs a record section (dir, …) in the configuration")

// Validate checks the section alone.
func (r *Record) Validate() error {
	if r.Dir == "" {
		return ErrRecordDir
	}
	var errs []error
	for name, d := range map[string]Duration{"segment": r.Segment, "max_age": r.MaxAge} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("record: %s: negative", name))
		}
	}
	return errors.Join(errs...)
}

// checkRecord checks a stream's record: against the configuration.
func (c *Config) checkRecord(s *Stream) error {
	if s.Record && c.Record == nil {
		return ErrNoRecord
	}
	return nil
}
