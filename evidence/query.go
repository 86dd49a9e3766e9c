package evidence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
)

var (
	_ defs.Evidence = (*Recorder)(nil)
)

// EvidenceList returns a page of recorded events, newest first (defs.Evidence).
func (r *Recorder) EvidenceList(q defs.EvidenceQuery) ([]defs.EvidenceItem, string, error) {
	iq := Query{Stream: q.Stream, Type: q.Type, Since: q.Since, Until: q.Until, Limit: q.Limit}
	if q.Cursor != "" {
		id, err := event.ParseID(q.Cursor)
		if err == nil && id.IsZero() {
			err = errors.New("zero id")
		}
		if err != nil {
			return nil, "", fmt.Errorf("cursor: %w", defs.ErrBadEvidenceID)
		}
		iq.Before = id
	}
	rows, clips, more, err := r.idx.list(iq)
	if err != nil {
		return nil, "", err
	}
	out := make([]defs.EvidenceItem, len(rows))
	for i := range rows {
		out[i] = item(&rows[i], r.clipOf(&rows[i], clips[i]))
	}
	next := ""
	if more && len(rows) > 0 {
		next = rows[len(rows)-1].ID.String()
	}
	return out, next, nil
}

// EvidenceItem returns one recorded event (defs.Evidence).
func (r *Recorder) EvidenceItem(id string) (defs.EvidenceItem, error) {
	eid, err := event.ParseID(id)
	if err != nil {
		return defs.EvidenceItem{}, defs.ErrBadEvidenceID
	}
	row, c, err := r.idx.row(eid)
	if errors.Is(err, ErrNotFound) {
		return defs.EvidenceItem{}, r.notFound(eid)
	}
	if err != nil {
		return defs.EvidenceItem{}, err
	}
	return item(&row, r.clipOf(&row, c)), nil
}

// EvidenceFile opens an event's clip or snapshot (defs.Evidence). The id is parsed as a ULID
// and the path comes from the index, checked against the layout.
func (r *Recorder) EvidenceFile(id string, kind defs.EvidenceFileKind) (*os.File, error) {
	eid, err := event.ParseID(id)
	if err != nil {
		return nil, defs.ErrBadEvidenceID
	}
	row, c, err := r.idx.row(eid)
	if errors.Is(err, ErrNotFound) {
		return nil, r.notFound(eid)
	}
	if err != nil {
		return nil, err
	}
	c = r.clipOf(&row, c)
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: the clip is still being recorded", defs.ErrEvidenceGone)
	case c.Gone != "":
		return nil, fmt.Errorf("%w: %s", defs.ErrEvidenceGone, c.Gone)
	}
	p, err := r.abs(c.Path)
	if err != nil {
		return nil, err
	}
	if kind != defs.EvidenceClipFile {
		v := -1
		switch kind {
		case defs.EvidenceSnapshot, defs.EvidenceSnapshotBoxed:
			if row.Best != nil {
				v = snapBest
			} else if row.Snapshot { // written before best frames were kept
				v = snapFrame
			}
			if v >= 0 && kind == defs.EvidenceSnapshotBoxed {
				v++
			}
		case defs.EvidenceFrame, defs.EvidenceFrameBoxed:
			if row.Snapshot {
				v = snapFrame
				if kind == defs.EvidenceFrameBoxed {
					v++
				}
			}
		default:
			return nil, fmt.Errorf("evidence: unknown file kind %d", kind)
		}
		if v < 0 {
			return nil, fmt.Errorf("%w: no snapshot was taken of this event", defs.ErrEvidenceGone)
		}
		p = filepath.Join(filepath.Dir(p), filepath.Base(snapRel(c.Path, eid, v)))
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", defs.ErrEvidenceGone, why[ReasonMissing])
	}
	return f, err
}

// notFound says why id has no row: expired when its time (a ULID's) is older than MaxAge.
func (r *Recorder) notFound(id event.ID) error {
	if r.MaxAge > 0 && id.Time().Before(r.Now().Add(-r.MaxAge)) {
		return fmt.Errorf("%w: expired (events older than max_age %v are deleted with their files)", defs.ErrEvidenceNotFound, r.MaxAge)
	}
	return defs.ErrEvidenceNotFound
}

func item(row *Row, c *Clip) defs.EvidenceItem {
	it := defs.EvidenceItem{ID: row.ID.String(), Stream: row.Stream, Type: row.Type, Time: row.Time, PTS: row.PTS,
		Event: row.Event}
	ec := &defs.EvidenceClip{ID: row.Clip.String(), State: "pending"}
	if c != nil {
		ec.Start, ec.End, ec.Want, ec.Truncated, ec.Bytes = c.Start, c.End, c.Want, c.Truncated, c.Bytes
		ec.Events = make([]string, len(c.Events))
		for i, id := range c.Events {
			ec.Events[i] = id.String()
		}
		ec.State = "written"
		if c.Gone != "" {
			ec.State, ec.Reason = "gone", c.Gone
		}
	}
	it.Clip = ec
	it.HasClip = ec.State == "written"
	it.HasSnapshot = it.HasClip && (row.Snapshot || row.Best != nil)
	if b := row.Best; b != nil && it.HasClip {
		it.Best = &defs.EvidenceBest{PTS: b.PTS, Score: b.Score, Box: b.Box, Cut: b.Cut}
	}
	it.HasFrame = it.HasClip && row.Snapshot
	return it
}

// EvidenceStats returns the recorder's figures (defs.EvidenceStatser).
func (r *Recorder) EvidenceStats() (defs.EvidenceStats, bool) {
	st := r.Stats()
	out := defs.EvidenceStats{Recorded: st.Recorded, Clips: st.Clips, Snapshots: st.Snapshots, ClipBytes: st.ClipBytes,
		Failures: st.Failures, Deleted: st.Deleted}
	stored := r.storedBytes()
	for _, s := range r.streamIDs() {
		rs := s.ring.Stats()
		es := defs.EvidenceStream{Stream: s.id, BufferBytes: rs.Bytes, BufferUnits: rs.Units, BufferCapacity: rs.Capacity,
			BufferOverruns: rs.Overrun, BufferSpan: rs.Span}
		es.StoredBytes, es.StoredClips = stored[s.id][0], stored[s.id][1]
		out.StoredBytes += es.StoredBytes
		out.Streams = append(out.Streams, es)
	}
	return out, true
}
