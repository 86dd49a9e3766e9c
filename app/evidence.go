package app

import (
	"fmt"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/evidence"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

// openEvidence starts the evidence recorder of the configuration's evidence section (nil
// without one): an unwritable folder or a bad setting is an error here, at start.
func (a *App) openEvidence(c *config.Evidence) error {
	if c == nil {
		return nil
	}
	r := &evidence.Recorder{Dir: c.Dir, Pre: time.Duration(c.Pre), Post: time.Duration(c.Post), MaxClip: time.Duration(c.MaxClip),
		MaxBytesPerStream: int64(c.MaxBytesPerStream), MaxBytes: int64(c.MaxBytes), MaxAge: time.Duration(c.MaxAge),
		MinFree: int64(c.MinFree), RingBytes: int(c.Buffer), PublicURL: c.PublicURL,
		Zones: c.Zones, Lines: c.Lines, Classes: c.Classes, Log: a.Log.With("module", "evidence")}
	for _, s := range c.Events {
		t, err := event.ParseType(s)
		if err != nil {
			return fmt.Errorf("evidence: events: %w", err)
		}
		r.Types = append(r.Types, t)
	}
	if c.Snapshots == nil || *c.Snapshots {
		r.NewDecoder = func(cd media.Codec) (evidence.Decoder, error) {
			d := &codec.Decoder{Codec: cd, Name: "evidence", Frames: 4}
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	if err := r.Init(); err != nil {
		return err
	}
	a.evidence = r
	return nil
}

// Evidence returns the evidence recorder's listing, nil when evidence is not recorded.
func (a *App) Evidence() defs.Evidence {
	if a.evidence == nil {
		return nil
	}
	return a.evidence
}

// EvidenceStats returns the evidence recorder's figures (defs.EvidenceStatser).
func (a *App) EvidenceStats() (defs.EvidenceStats, bool) {
	if a.evidence == nil {
		return defs.EvidenceStats{}, false
	}
	return a.evidence.EvidenceStats()
}
