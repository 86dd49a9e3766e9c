package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Tracker configures a stream's multi-object tracker (package track, ByteTrack-class): zero
// fields take the tracker's defaults. Written `tracker: none`, it turns tracking off (detections
// carry no track_id and zones and lines are unavailable).
type Tracker struct {
	// Disabled is `tracker: none`.
	Disabled bool `yaml:"-" json:"-"`
	// TrackThresh splits detections into high (≥) and low scores (0…1).
	TrackThresh float64 `yaml:"track_thresh,omitempty" json:"track_thresh,omitempty"`
	// LowThresh drops detections below it.
	LowThresh float64 `yaml:"low_thresh,omitempty" json:"low_thresh,omitempty"`
	// NewTrackThresh is the lowest score that starts a track.
	NewTrackThresh float64 `yaml:"new_track_thresh,omitempty" json:"new_track_thresh,omitempty"`
	// MatchThresh gates the first association (IoU distance, 0…1).
	MatchThresh float64 `yaml:"match_thresh,omitempty" json:"match_thresh,omitempty"`
	// TrackBuffer is how long a lost track can be found again.
	TrackBuffer Duration `yaml:"track_buffer,omitempty" json:"track_buffer,omitempty"`
	// FrameRate is the nominal rate whose period is the motion model's time step.
	FrameRate float64 `yaml:"frame_rate,omitempty" json:"frame_rate,omitempty"`
	// ReID re-associates objects by appearance after the motion model lost them (embeddings
	// from a cascade of kind embedding); nil: off.
	ReID *ReID `yaml:"reid,omitempty" json:"reid,omitempty"`
}

// trackerFields has Tracker's fields without its methods (for decoding).
type trackerFields Tracker

// UnmarshalYAML implements yaml.InterfaceUnmarshaler: "none" or the fields.
func (t *Tracker) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if unmarshal(&word) == nil {
		return t.word(word)
	}
	return unmarshal((*trackerFields)(t))
}

// UnmarshalJSON implements json.Unmarshaler: "none" or the fields.
func (t *Tracker) UnmarshalJSON(b []byte) error {
	var word string
	if json.Unmarshal(b, &word) == nil {
		return t.word(word)
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*trackerFields)(t))
}

// MarshalJSON writes "none" or the fields.
func (t Tracker) MarshalJSON() ([]byte, error) {
	if t.Disabled {
		return []byte(`"none"`), nil
	}
	return json.Marshal(trackerFields(t))
}

// MarshalYAML implements yaml.InterfaceMarshaler.
func (t Tracker) MarshalYAML() (any, error) {
	if t.Disabled {
		return "none", nil
	}
	return trackerFields(t), nil
}

func (t *Tracker) word(w string) error {
	if w != "none" {
		return fmt.Errorf("tracker %q: write none, or the tracker's settings", w)
	}
	*t = Tracker{Disabled: true}
	return nil
}

// Enabled reports whether a stream with this setting tracks (nil: the default, on).
func (t *Tracker) Enabled() bool { return t == nil || !t.Disabled }

// Validate checks the ranges.
func (t *Tracker) Validate() error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, v := range []struct {
		name string
		v    float64
	}{{"track_thresh", t.TrackThresh}, {"low_thresh", t.LowThresh}, {"new_track_thresh", t.NewTrackThresh}, {"match_thresh", t.MatchThresh}} {
		if !(v.v >= 0 && v.v <= 1) {
			errs = append(errs, fmt.Errorf("tracker.%s %v must be within 0…1", v.name, v.v))
		}
	}
	if t.TrackBuffer < 0 || time.Duration(t.TrackBuffer) > time.Hour {
		errs = append(errs, errors.New("tracker.track_buffer must be within 0…1h"))
	}
	if t.LowThresh > 0 && t.TrackThresh > 0 && t.LowThresh > t.TrackThresh {
		errs = append(errs, fmt.Errorf("tracker.low_thresh %v must not be above tracker.track_thresh %v", t.LowThresh, t.TrackThresh))
	}
	if t.FrameRate < 0 || math.IsInf(t.FrameRate, 0) || math.IsNaN(t.FrameRate) {
		errs = append(errs, errors.New("tracker.frame_rate must be a number ≥ 0"))
	}
	errs = append(errs, t.ReID.Validate())
	return errors.Join(errs...)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
