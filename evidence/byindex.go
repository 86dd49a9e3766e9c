package evidence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vinfer/vinfer/event"
)

// The "by" bucket indexes the events bucket by stream, by type and by both, so that a filtered
// listing seeks to its first row and reads the rows it returns (and one more, to know that more
// follow) instead of walking every event. A key is a kind byte, each name as a uvarint length
// and its bytes, then the event's 16-byte ULID; values are empty. The keys of one kind and name
// therefore sort by time, like the events bucket's. Entries change in the transactions that
// change their rows (putRows, dropBefore), so a crash never leaves the two apart. The key
// byBuilt says the bucket is complete: an index.db from before it (or a build cut short) is
// indexed again at open.
var (
	bucketBy = []byte("by")
	byBuilt  = []byte("\x00built") // value: byLayout; kinds are letters, so no entry sorts with it
	byLayout = []byte("1")
)

// Entry kinds.
const (
	byStream = 's'
	byType   = 't'
	byBoth   = 'b'
)

// byBatch is how many rows one transaction indexes while building the bucket.
const byBatch = 20000

func appendName(b []byte, name string) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

// byPrefix appends to b the key prefix of the entries of rows with stream and typ, both set (byBoth),
// or only one (byStream, byType); with neither it appends nothing: the events bucket itself.
func byPrefix(b []byte, stream, typ string) []byte {
	switch {
	case stream != "" && typ != "":
		return appendName(appendName(append(b, byBoth), stream), typ)
	case stream != "":
		return appendName(append(b, byStream), stream)
	case typ != "":
		return appendName(append(b, byType), typ)
	}
	return b
}

// byKeys calls f with each entry key of a row: its stream's, its type's and both's (the names
// a query can give; an empty name is no filter, so is not indexed). The key is reused after f.
func byKeys(stream, typ string, id event.ID, f func(k []byte) error) error {
	var buf [64]byte
	if stream != "" {
		if err := f(append(byPrefix(buf[:0], stream, ""), id[:]...)); err != nil {
			return err
		}
	}
	if typ != "" {
		if err := f(append(byPrefix(buf[:0], "", typ), id[:]...)); err != nil {
			return err
		}
	}
	if stream != "" && typ != "" {
		return f(append(byPrefix(buf[:0], stream, typ), id[:]...))
	}
	return nil
}

// rowKeys is the part of a stored row that names its entries.
type rowKeys struct {
	Stream string `json:"stream"`
	Type   string `json:"type"`
}

// byStored calls f with each entry key of the stored row v (none when it does not decode).
func byStored(id event.ID, v []byte, f func(k []byte) error) error {
	var o rowKeys
	if json.Unmarshal(v, &o) != nil {
		return nil
	}
	return byKeys(o.Stream, o.Type, id, f)
}

// byPut adds a row's entries, first removing those of the row it replaces (old, nil if none)
// when that one named another stream or type.
func byPut(by *bolt.Bucket, r *Row, old []byte) error {
	if old != nil {
		var o rowKeys
		if json.Unmarshal(old, &o) == nil && (o.Stream != r.Stream || o.Type != r.Type) {
			if err := byKeys(o.Stream, o.Type, r.ID, by.Delete); err != nil {
				return err
			}
		}
	}
	return byKeys(r.Stream, r.Type, r.ID, func(k []byte) error { return by.Put(k, []byte{}) })
}

// byBuild indexes every row unless the bucket is complete: it drops what is there and fills it
// byBatch rows a transaction, marking it complete in the last. It returns the rows indexed (0
// when the bucket was complete).
func byBuild(db *bolt.DB) (int, error) {
	done := false
	err := db.Update(func(tx *bolt.Tx) error {
		if by := tx.Bucket(bucketBy); by != nil && bytes.Equal(by.Get(byBuilt), byLayout) {
			done = true
			return nil
		}
		if tx.Bucket(bucketBy) != nil {
			if err := tx.DeleteBucket(bucketBy); err != nil {
				return err
			}
		}
		_, err := tx.CreateBucket(bucketBy)
		return err
	})
	if err != nil || done {
		return 0, err
	}
	rows := 0
	var from []byte // the first key not yet indexed; nil: the first
	for {
		err := db.Update(func(tx *bolt.Tx) error {
			by := tx.Bucket(bucketBy)
			cur := tx.Bucket(bucketEvents).Cursor()
			k, v := cur.First()
			if from != nil {
				k, v = cur.Seek(from)
			}
			// Put in key order: bbolt holds a transaction's keys in nodes that split only at
			// commit, so inserting out of order into a large one moves its tail each time.
			var keys [][]byte
			for n := 0; k != nil && n < byBatch; k, v = cur.Next() {
				var id event.ID
				copy(id[:], k)
				_ = byStored(id, v, func(k []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
				n++
				rows++
			}
			slices.SortFunc(keys, bytes.Compare)
			for _, k := range keys {
				if err := by.Put(k, []byte{}); err != nil {
					return err
				}
			}
			if k == nil {
				from = nil
				return by.Put(byBuilt, byLayout)
			}
			from = append(from[:0], k...)
			return nil
		})
		if err != nil {
			return rows, fmt.Errorf("indexing events by stream and type: %w", err)
		}
		if from == nil {
			return rows, nil
		}
	}
}

// idAt returns the smallest ULID whose time (whole milliseconds) is at or after t; ok is false
// when no ULID's is (t beyond 2⁴⁸−1 ms). Before the Unix epoch it returns the zero ID.
func idAt(t time.Time) (id event.ID, ok bool) {
	sec, ns := t.Unix(), int64(t.Nanosecond()) // t = sec + ns/1e9, 0 ≤ ns < 1e9
	if sec < 0 {
		return id, true
	}
	if sec > (1<<48-1)/1000+1 {
		return id, false
	}
	ms := sec*1000 + ns/1e6
	if ns%1e6 != 0 {
		ms++ // the first whole millisecond at or after t
	}
	if ms > 1<<48-1 {
		return id, false
	}
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return id, true
}

// span is the range of keys a query reads, newest first: prefix followed by an id in
// [lo, hi); nil bounds are open.
type span struct {
	bucket []byte
	prefix []byte
	lo, hi []byte
	empty  bool
}

// spanOf returns the keys that hold q's rows: in the events bucket when q filters on neither
// stream nor type, else in the by bucket under q's prefix; Since and Until (whole
// milliseconds: a ULID's time) and Before bound the ids.
func spanOf(q Query) span {
	s := span{bucket: bucketEvents, prefix: byPrefix(nil, q.Stream, q.Type)}
	if len(s.prefix) > 0 {
		s.bucket = bucketBy
	}
	at := func(id event.ID) []byte { return append(append([]byte(nil), s.prefix...), id[:]...) }
	if !q.Since.IsZero() {
		id, ok := idAt(q.Since)
		s.lo, s.empty = at(id), !ok
	}
	var hi *event.ID
	if !q.Before.IsZero() {
		hi = &q.Before
	}
	if !q.Until.IsZero() {
		if id, ok := idAt(q.Until); ok && (hi == nil || bytes.Compare(id[:], hi[:]) < 0) {
			hi = &id
		}
	}
	if hi != nil {
		s.hi = at(*hi)
	}
	return s
}

// walk calls f with the id of each key in s, newest first, until f returns false; v is the
// row when s is in the events bucket, else nil.
func (s span) walk(tx *bolt.Tx, f func(id event.ID, v []byte) bool) {
	b := tx.Bucket(s.bucket)
	if s.empty || b == nil {
		return
	}
	// Seek to the first key past the span, then step back: the keys under prefix are
	// contiguous (a name's length comes before it), and only they have it.
	end := s.hi
	if end == nil {
		end = prefixEnd(s.prefix)
	}
	cur := b.Cursor()
	k, v := cur.Last()
	if end != nil {
		if k, v = cur.Seek(end); k == nil {
			k, v = cur.Last()
		} else {
			k, v = cur.Prev()
		}
	}
	rows := len(s.prefix) == 0
	for ; k != nil; k, v = cur.Prev() {
		if len(k) != len(s.prefix)+len(event.ID{}) || !bytes.HasPrefix(k, s.prefix) ||
			(s.lo != nil && bytes.Compare(k, s.lo) < 0) {
			return
		}
		var id event.ID
		copy(id[:], k[len(s.prefix):])
		if !rows {
			v = nil
		}
		if !f(id, v) {
			return
		}
	}
}

// prefixEnd returns the smallest key greater than every key starting with p (nil: none, or p
// empty).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < math.MaxUint8 {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
