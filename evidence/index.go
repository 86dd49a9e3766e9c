package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vinfer/vinfer/event"
)

// The index is one bbolt file (a B+tree in a single file, copy-on-write with an fsync per
// transaction, so a crash leaves the last committed state). Two buckets, keyed by the 16 bytes
// of a ULID so keys sort by time: events (one Row per recorded event) and clips (one Clip per
// file written, named by its first event's id); a third, by, indexes the events by stream and
// type (byindex.go).
var (
	bucketEvents = []byte("events")
	bucketClips  = []byte("clips")
)

// ErrNotFound is returned for an id the index does not hold.
var ErrNotFound = errors.New("no such event")

// Row is one recorded event.
type Row struct {
	ID     event.ID  `json:"id"`
	Stream string    `json:"stream"`
	Type   string    `json:"type"`
	Time   time.Time `json:"time"`
	// PTS in seconds since the start of the stream.
	PTS float64 `json:"pts"`
	// Event is the event's JSON (docs/events.schema.json).
	Event json.RawMessage `json:"event"`
	// Clip is the id of the clip that shows the event (the first event of that clip).
	Clip event.ID `json:"clip"`
	// Snapshot reports a JPEG of the event's frame; Best the frame of its track chosen for
	// the best-frame snapshot, when that JPEG was written.
	Snapshot bool  `json:"snapshot,omitempty"`
	Best     *Best `json:"best,omitempty"`
}

// Best is the frame of a track chosen for its snapshot (best.go).
type Best struct {
	// PTS in seconds; Score and Box the track's detection there; Cut: the box touches the
	// frame border (no better one in the clip).
	PTS   float64    `json:"pts"`
	Score float32    `json:"score"`
	Box   [4]float32 `json:"box"`
	Cut   bool       `json:"cut,omitempty"`
}

// snapInfo is what the writer took of one event.
type snapInfo struct {
	frame bool
	best  *Best
}

// Clip is one clip file with the snapshots of its events.
type Clip struct {
	ID     event.ID `json:"id"`
	Stream string   `json:"stream"`
	// Path is relative to the evidence folder: STREAM/YYYY-MM-DD/ID.mp4.
	Path string `json:"path,omitempty"`
	// Bytes of the clip and its snapshots.
	Bytes int64 `json:"bytes"`
	// Start and End are the PTS (seconds) of the clip's first unit and of the end of its last;
	// Want is the start asked for (first event − pre). Truncated: the buffer did not reach back
	// to Want (the stream had just started, or the buffer overran), so Start > Want.
	Start     float64    `json:"start"`
	End       float64    `json:"end"`
	Want      float64    `json:"want"`
	Truncated bool       `json:"truncated,omitempty"`
	Events    []event.ID `json:"events"`
	Created   time.Time  `json:"created"`
	// Gone says why the file is not (or no longer) there: empty while it is.
	Gone string `json:"gone,omitempty"`
}

// index wraps the bbolt database.
type index struct{ db *bolt.DB }

// openIndex opens (creating) the index at path; built is the rows it indexed by stream and type
// at open (an older store's, once).
func openIndex(path string) (x *index, built int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, 0, fmt.Errorf("index %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEvents, bucketClips} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		built, err = byBuild(db)
	}
	if err != nil {
		db.Close()
		return nil, 0, fmt.Errorf("index %s: %w", path, err)
	}
	return &index{db: db}, built, nil
}

func (x *index) close() error { return x.db.Close() }

func put(b *bolt.Bucket, id event.ID, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(id[:], buf)
}

// putRows stores event rows and their entries in the by bucket.
func (x *index) putRows(rows []Row) error {
	return x.db.Update(func(tx *bolt.Tx) error {
		b, by := tx.Bucket(bucketEvents), tx.Bucket(bucketBy)
		for i := range rows {
			if err := byPut(by, &rows[i], b.Get(rows[i].ID[:])); err != nil {
				return err
			}
			if err := put(b, rows[i].ID, &rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// putClip stores a clip and marks its events' snapshots.
func (x *index) putClip(c *Clip, snaps map[event.ID]*snapInfo) error {
	return x.db.Update(func(tx *bolt.Tx) error {
		if err := put(tx.Bucket(bucketClips), c.ID, c); err != nil {
			return err
		}
		eb := tx.Bucket(bucketEvents)
		for id, in := range snaps {
			var r Row
			v := eb.Get(id[:])
			if v == nil || json.Unmarshal(v, &r) != nil {
				continue
			}
			r.Snapshot, r.Best = in.frame, in.best
			if err := put(eb, id, &r); err != nil {
				return err
			}
		}
		return nil
	})
}

// row returns one event and its clip (nil when none was recorded).
func (x *index) row(id event.ID) (Row, *Clip, error) {
	var r Row
	var c *Clip
	err := x.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEvents).Get(id[:])
		if v == nil {
			return ErrNotFound
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if cv := tx.Bucket(bucketClips).Get(r.Clip[:]); cv != nil {
			c = new(Clip)
			return json.Unmarshal(cv, c)
		}
		return nil
	})
	return r, c, err
}

// Query selects events, newest first.
type Query struct {
	// Stream and Type, when set, must match.
	Stream, Type string
	// Since keeps events at or after it, Until those before it (zero: no bound); Before (a
	// cursor: the last id of the previous page) those strictly before it. Times compare at
	// the millisecond of the event's id.
	Since, Until time.Time
	Before       event.ID
	// Limit is the page size (1…1000, default 100).
	Limit int
}

// list returns a page of rows with their clips, and whether more follow. It reads the rows it
// returns and one more, found through the by bucket (or the events bucket without a stream or
// type): O(log n + limit) whatever the filter.
func (x *index) list(q Query) (rows []Row, clips []*Clip, more bool, err error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	err = x.db.View(func(tx *bolt.Tx) error {
		eb, cb := tx.Bucket(bucketEvents), tx.Bucket(bucketClips)
		spanOf(q).walk(tx, func(id event.ID, v []byte) bool {
			if v == nil {
				v = eb.Get(id[:])
			}
			var r Row
			if v == nil || json.Unmarshal(v, &r) != nil {
				return true
			}
			if (q.Stream != "" && r.Stream != q.Stream) || (q.Type != "" && r.Type != q.Type) {
				return true // (the by bucket names only rows that match)
			}
			if len(rows) == q.Limit {
				more = true
				return false
			}
			rows, clips = append(rows, r), append(clips, clipIn(cb, r.Clip))
			return true
		})
		return nil
	})
	return rows, clips, more, err
}

// clipIn returns clip id from the clips bucket b (nil when absent or unreadable).
func clipIn(b *bolt.Bucket, id event.ID) *Clip {
	v := b.Get(id[:])
	if v == nil {
		return nil
	}
	c := new(Clip)
	if json.Unmarshal(v, c) != nil {
		return nil
	}
	return c
}

// clips returns every clip, oldest first.
func (x *index) clips() ([]*Clip, error) {
	var out []*Clip
	err := x.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClips).ForEach(func(_, v []byte) error {
			c := new(Clip)
			if json.Unmarshal(v, c) == nil {
				out = append(out, c)
			}
			return nil
		})
	})
	return out, err
}

// markGone records why clips' files are gone.
func (x *index) markGone(cs []*Clip, why string) error {
	return x.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClips)
		for _, c := range cs {
			c.Gone, c.Bytes = why, 0
			if err := put(b, c.ID, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropBefore deletes the rows (with their by entries) and clip records older than t, and the
// oldest rows beyond maxRows; it returns how many rows went.
func (x *index) dropBefore(t time.Time, maxRows int) (int, error) {
	n := 0
	err := x.db.Update(func(tx *bolt.Tx) error {
		by := tx.Bucket(bucketBy)
		for _, name := range [][]byte{bucketEvents, bucketClips} {
			b := tx.Bucket(name)
			extra := 0
			if name[0] == 'e' && maxRows > 0 {
				extra = b.Stats().KeyN - maxRows
			}
			cur := b.Cursor()
			for k, v := cur.First(); k != nil; k, v = cur.First() {
				var id event.ID
				copy(id[:], k)
				if !(id.Time().Before(t) || extra > 0) {
					break
				}
				if name[0] == 'e' {
					if err := byStored(id, v, by.Delete); err != nil {
						return err
					}
					n++
				}
				if err := cur.Delete(); err != nil {
					return err
				}
				extra--
			}
		}
		return nil
	})
	return n, err
}
