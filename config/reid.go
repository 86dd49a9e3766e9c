package config

import (
	"errors"
	"fmt"
	"time"
)

// ReID is the tracker's appearance re-identification: a track the motion model gave up on is
// kept in a gallery of its embeddings for MaxAge; a new track whose first embedding is close
// enough (cosine ≥ Threshold) to one of those takes its id back.
type ReID struct {
	// Threshold is the least cosine similarity of a match (0…1; default 0.85: on the bundled office clip
	// with person-reidentification-retail-0288, one person after a 4 s occlusion scores 0.99
	// and the next person 0.75).
	Threshold float64 `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	// MaxAge is how long an ended track can be found again (default 10s, at most 10m).
	MaxAge Duration `yaml:"max_age,omitempty" json:"max_age,omitempty"`
	// Gallery is how many embeddings a track keeps, the latest (default 16, at most 256).
	Gallery int `yaml:"gallery,omitempty" json:"gallery,omitempty"`
	// EmbeddingOnEnd puts the track's mean embedding on its track.end event ("embedding":
	// [256 numbers]) for matching identities across cameras.
	EmbeddingOnEnd bool `yaml:"embedding_on_end,omitempty" json:"embedding_on_end,omitempty"`
}

// Defaults of ReID.
const (
	DefaultReIDThreshold = 0.85
	DefaultReIDMaxAge    = 10 * time.Second
	DefaultReIDGallery   = 16
)

// Validate checks the ranges (nil: off, valid).
func (r *ReID) Validate() error {
	if r == nil {
		return nil
	}
	var errs []error
	if !(r.Threshold >= 0 && r.Threshold <= 1) {
		errs = append(errs, fmt.Errorf("tracker.reid.threshold %v must be within 0…1", r.Threshold))
	}
	if r.MaxAge < 0 || time.Duration(r.MaxAge) > 10*time.Minute {
		errs = append(errs, errors.New("tracker.reid.max_age must be within 0…10m"))
	}
	if r.Gallery < 0 || r.Gallery > 256 {
		errs = append(errs, errors.New("tracker.reid.gallery must be within 0…256"))
	}
	return errors.Join(errs...)
}
