package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vinfer/vinfer/event"
)

var (
	listT0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	listTypes = []string{"line.cross", "zone.enter", "zone.leave", "zone.loiter"}
)

// testIndex opens an index in a temporary folder, closed by the test; it commits without
// fsync (what is tested is the content).
func testIndex(t testing.TB) *index {
	t.Helper()
	x, _, err := openIndex(filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	x.db.NoSync = true
	t.Cleanup(func() { x.close() })
	return x
}

// randomRows returns n rows, oldest first, over streams and listTypes, their times span ms
// milliseconds from listT0 (several to a millisecond when ms < n), with a small event payload.
func randomRows(rng *rand.Rand, n, streams, ms int, payload string) []Row {
	times := make([]int, n)
	for i := range times {
		times[i] = rng.IntN(max(ms, 1))
	}
	slices.Sort(times)
	gen := event.NewGenerator([32]byte{byte(rng.Uint32())})
	rows := make([]Row, n)
	for i, m := range times {
		wall := listT0.Add(time.Duration(m) * time.Millisecond)
		typ := listTypes[0]
		switch p := rng.IntN(100); {
		case p == 0:
			typ = listTypes[3] // 1 %: a rare type
		case p < 15:
			typ = listTypes[2]
		case p < 40:
			typ = listTypes[1]
		}
		id := gen.New(wall)
		rows[i] = Row{ID: id, Stream: fmt.Sprintf("cam%02d", rng.IntN(max(streams, 1))), Type: typ, Time: wall,
			PTS: float64(m) / 1000, Clip: id, Event: json.RawMessage(payload)}
	}
	return rows
}

// putShuffled stores rows in random order, in transactions of 1 to 64 rows.
func putShuffled(t testing.TB, x *index, rng *rand.Rand, rows []Row) {
	t.Helper()
	rs := slices.Clone(rows)
	rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	for len(rs) > 0 {
		n := min(len(rs), 1+rng.IntN(64))
		if err := x.putRows(rs[:n]); err != nil {
			t.Fatal(err)
		}
		rs = rs[n:]
	}
}

// bruteList is the specification of list: every row (oldest first) that matches q, newest
// first, cut at the limit.
func bruteList(rows []Row, q Query) (page []event.ID, more bool) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		if (q.Stream != "" && r.Stream != q.Stream) || (q.Type != "" && r.Type != q.Type) ||
			(!q.Since.IsZero() && r.ID.Time().Before(q.Since)) ||
			(!q.Until.IsZero() && !r.ID.Time().Before(q.Until)) ||
			(!q.Before.IsZero() && bytes.Compare(r.ID[:], q.Before[:]) >= 0) {
			continue
		}
		if len(page) == q.Limit {
			return page, true
		}
		page = append(page, r.ID)
	}
	return page, false
}

// checkPages walks q's pages through list and through bruteList, cursor by cursor, and fails
// at the first difference; it returns the number of rows listed.
func checkPages(t testing.TB, x *index, rows []Row, q Query) int {
	t.Helper()
	n := 0
	for page := 0; ; page++ {
		got, clips, more, err := x.list(q)
		if err != nil {
			t.Fatal(err)
		}
		want, wantMore := bruteList(rows, q)
		ids := make([]event.ID, len(got))
		for i := range got {
			ids[i] = got[i].ID
			if clips[i] != nil {
				t.Fatalf("%+v: row %s has a clip, none was stored", q, ids[i])
			}
		}
		if !slices.Equal(ids, want) || more != wantMore {
			t.Fatalf("%+v, page %d: got %d rows (more %v), want %d (more %v)\n got %v\nwant %v",
				q, page, len(ids), more, len(want), wantMore, ids, want)
		}
		n += len(ids)
		if !more {
			return n
		}
		q.Before = ids[len(ids)-1]
	}
}

// dropModel is what dropBefore(t, maxRows) leaves of rows (oldest first): ids sort by time, so
// it deletes the first max(rows older than t, len − maxRows).
func dropModel(rows []Row, t time.Time, maxRows int) []Row {
	n := 0
	for n < len(rows) && rows[n].ID.Time().Before(t) {
		n++
	}
	if maxRows > 0 {
		n = max(n, len(rows)-maxRows)
	}
	return rows[n:]
}

// TestIndexListMatchesFilter: on 3000 random rows over 12 streams (several to a millisecond),
// every page of each query (stream, type, both, since and until off a millisecond boundary,
// cursors) equals the brute-force filter of the rows, before and after retention drops rows.
func TestIndexListMatchesFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := randomRows(rng, 3000, 12, 2000, `{"k":1}`)
	x := testIndex(t)
	putShuffled(t, x, rng, rows)
	at := func(ms float64) time.Time { return listT0.Add(time.Duration(ms * float64(time.Millisecond))) }
	// bounds within the millisecond of a stored row: since keeps it only from its start, until
	// keeps it from just after
	a, z := rows[1000], rows[2100]
	inA, inZ := a.ID.Time().Add(400*time.Microsecond), z.ID.Time().Add(900*time.Microsecond)
	cases := []struct {
		name string
		q    Query
	}{
		{"all", Query{}},
		{"all/limit 7", Query{Limit: 7}},
		{"stream", Query{Stream: "cam03", Limit: 50}},
		{"stream/missing", Query{Stream: "cam99"}},
		{"stream/prefix of others", Query{Stream: "cam0", Limit: 5}},
		{"type", Query{Type: "zone.enter", Limit: 100}},
		{"type/rare", Query{Type: "zone.loiter", Limit: 3}},
		{"stream+type", Query{Stream: "cam07", Type: "zone.leave", Limit: 9}},
		{"stream+type/rare", Query{Stream: "cam11", Type: "zone.loiter", Limit: 1}},
		{"since", Query{Since: at(1500), Limit: 64}},
		{"since/within a millisecond", Query{Stream: a.Stream, Since: inA, Limit: 10}},
		{"since/at a millisecond", Query{Stream: a.Stream, Since: a.ID.Time(), Limit: 10}},
		{"until", Query{Until: at(300), Limit: 33}},
		{"until/within a millisecond", Query{Stream: z.Stream, Type: z.Type, Until: inZ, Limit: 20}},
		{"until/at a millisecond", Query{Stream: z.Stream, Until: z.ID.Time(), Limit: 20}},
		{"since+until", Query{Stream: "cam05", Since: at(400), Until: at(900.5), Limit: 8}},
		{"since after until", Query{Since: at(900), Until: at(400)}},
		{"since before 1970", Query{Stream: "cam02", Since: time.Unix(-5, 0), Limit: 100}},
		{"until before 1970", Query{Until: time.Unix(-5, 0)}},
		{"since beyond ULIDs", Query{Since: time.UnixMilli(1 << 48)}},
		{"until beyond ULIDs", Query{Type: "zone.loiter", Until: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}},
		{"cursor", Query{Stream: "cam04", Before: rows[1700].ID, Limit: 25}},
		{"cursor+until", Query{Stream: "cam04", Before: rows[1700].ID, Until: at(1000), Limit: 25}},
		{"cursor past all", Query{Type: "zone.leave", Before: event.ID{0xff}, Limit: 500}},
		{"limit over 1000", Query{Limit: 5000}},
	}
	for _, drop := range []struct {
		before  time.Time
		maxRows int
	}{{}, {at(250), 0}, {time.Time{}, 2000}, {at(1999), 0}} {
		if !drop.before.IsZero() || drop.maxRows > 0 {
			if _, err := x.dropBefore(drop.before, drop.maxRows); err != nil {
				t.Fatal(err)
			}
			rows = dropModel(rows, drop.before, drop.maxRows)
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%d rows/%s", len(rows), c.name), func(t *testing.T) { checkPages(t, x, rows, c.q) })
		}
	}
	// Retention left no entry of a deleted row: the by bucket holds three per row of a stream
	// and type, and the built mark.
	if err := x.db.View(func(tx *bolt.Tx) error {
		if n, want := tx.Bucket(bucketBy).Stats().KeyN, 3*len(rows)+1; n != want {
			t.Errorf("by bucket: %d keys for %d rows, want %d", n, len(rows), want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestIndexByBuilt: an index.db from before the by bucket (or with a build cut short) is
// indexed at open, and lists as before.
func TestIndexByBuilt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows := randomRows(rng, 500, 5, 10000, `{}`)
	path := filepath.Join(t.TempDir(), "index.db")
	for _, damage := range []string{"none", "no bucket", "no mark"} {
		x, _, err := openIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		if damage == "none" {
			putShuffled(t, x, rng, rows)
		}
		checkPages(t, x, rows, Query{Stream: "cam02", Limit: 13})
		err = x.db.Update(func(tx *bolt.Tx) error {
			if damage == "no bucket" {
				return tx.DeleteBucket(bucketBy)
			}
			return tx.Bucket(bucketBy).Delete(byBuilt)
		})
		if err != nil {
			t.Fatal(err)
		}
		x.close()
		var built int
		if x, built, err = openIndex(path); err != nil {
			t.Fatal(err)
		}
		if built != len(rows) {
			t.Errorf("%s: indexed %d rows at open, want %d", damage, built, len(rows))
		}
		t.Run(damage, func(t *testing.T) {
			checkPages(t, x, rows, Query{Stream: "cam02", Limit: 13})
			checkPages(t, x, rows, Query{Stream: "cam04", Type: "zone.enter", Limit: 7})
			checkPages(t, x, rows, Query{Type: "zone.leave", Since: listT0.Add(3 * time.Second), Limit: 11})
		})
		x.close()
	}
}

// TestIndexByReplace: a row stored again under another stream and type moves in the by bucket;
// its clip is listed with it.
func TestIndexByReplace(t *testing.T) {
	x := testIndex(t)
	rows := randomRows(rand.New(rand.NewPCG(5, 6)), 20, 2, 100, `{}`)
	if err := x.putRows(rows); err != nil {
		t.Fatal(err)
	}
	rows[7].Stream, rows[7].Type = "elsewhere", "track.end"
	if err := x.putRows(rows[7:8]); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{Stream: "cam00"}, {Stream: "cam01"}, {Stream: "elsewhere"}, {Type: "track.end"},
		{Type: "line.cross"}, {Stream: "elsewhere", Type: "track.end"}} {
		checkPages(t, x, rows, q)
	}
	// a row's clip comes with it
	if err := x.putClip(&Clip{ID: rows[7].ID, Stream: "elsewhere", Events: []event.ID{rows[7].ID}}, nil); err != nil {
		t.Fatal(err)
	}
	got, clips, _, err := x.list(Query{Stream: "elsewhere"})
	if err != nil || len(got) != 1 || clips[0] == nil || clips[0].ID != rows[7].ID {
		t.Fatalf("list of the clip's stream: %d rows, clips %v, %v", len(got), clips, err)
	}
}

// FuzzIndexList: random rows, stored in random order, some dropped by retention, list what a
// brute-force filter does for any stream, type, time range, cursor and limit.
// Corpus: testdata/fuzz/FuzzIndexList.
func FuzzIndexList(f *testing.F) {
	f.Add(uint64(1), uint16(200), uint8(4), uint8(1), uint8(0), int32(-1), int32(-1), uint16(0), uint8(10), uint16(0))
	f.Add(uint64(2), uint16(300), uint8(3), uint8(255), uint8(3), int32(5000), int32(90000), uint16(150), uint8(4), uint16(40))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, streams, qs, qt uint8, since, until int32, cursor uint16, limit uint8, drop uint16) {
		rng := rand.New(rand.NewPCG(seed, 0))
		rows := randomRows(rng, int(n%400), int(streams%8)+1, 100+int(seed%300), `{}`)
		x := testIndex(t)
		putShuffled(t, x, rng, rows)
		if drop > 0 {
			before := listT0.Add(time.Duration(drop%512) * time.Millisecond / 2)
			if _, err := x.dropBefore(before, int(drop>>9)); err != nil {
				t.Fatal(err)
			}
			rows = dropModel(rows, before, int(drop>>9))
		}
		q := Query{Limit: int(limit)}
		if qs != 255 {
			q.Stream = fmt.Sprintf("cam%02d", qs%10) // some not stored
		}
		if qt != 255 {
			q.Type = listTypes[int(qt)%len(listTypes)]
		}
		// times in tenths of a millisecond from listT0, negative: unset
		if since >= 0 {
			q.Since = listT0.Add(time.Duration(since) * 100 * time.Microsecond)
		}
		if until >= 0 {
			q.Until = listT0.Add(time.Duration(until) * 100 * time.Microsecond)
		}
		if cursor > 0 && len(rows) > 0 {
			q.Before = rows[int(cursor)%len(rows)].ID
		}
		checkPages(t, x, rows, q)
	})
}

// listScan is list before the by bucket (commit 895de35): the events newest first, each
// decoded and filtered, until the page is full. Kept as the reference for BenchmarkIndexList;
// Until, which it did not have, skips rows as Stream does.
func listScan(x *index, q Query) (rows []Row, clips []*Clip, more bool, err error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, 1000)
	err = x.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketEvents).Cursor()
		cb := tx.Bucket(bucketClips)
		var k, v []byte
		if q.Before.IsZero() {
			k, v = cur.Last()
		} else {
			k, v = cur.Seek(q.Before[:])
			if k == nil {
				k, v = cur.Last()
			}
			for k != nil && bytes.Compare(k, q.Before[:]) >= 0 {
				k, v = cur.Prev()
			}
		}
		for ; k != nil; k, v = cur.Prev() {
			var r Row
			if err := json.Unmarshal(v, &r); err != nil {
				continue
			}
			if !q.Since.IsZero() && r.ID.Time().Before(q.Since) {
				break // ids sort by time
			}
			if (q.Stream != "" && r.Stream != q.Stream) || (q.Type != "" && r.Type != q.Type) ||
				(!q.Until.IsZero() && !r.ID.Time().Before(q.Until)) {
				continue
			}
			if len(rows) == q.Limit {
				more = true
				break
			}
			rows, clips = append(rows, r), append(clips, clipIn(cb, r.Clip))
		}
		return nil
	})
	return rows, clips, more, err
}

// TestListScanReference: the reference scan lists what list does (so the benchmark compares
// equal work).
func TestListScanReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rows := randomRows(rng, 1000, 6, 5000, `{}`)
	x := testIndex(t)
	putShuffled(t, x, rng, rows)
	for _, q := range []Query{{}, {Stream: "cam01", Limit: 30}, {Type: "zone.loiter"},
		{Stream: "cam02", Type: "zone.enter", Since: listT0.Add(time.Second), Until: listT0.Add(4 * time.Second), Before: rows[800].ID}} {
		a, _, am, err := x.list(q)
		b, _, bm, err2 := listScan(x, q)
		if err != nil || err2 != nil || am != bm || len(a) != len(b) {
			t.Fatalf("%+v: list %d rows (more %v, %v), scan %d (more %v, %v)", q, len(a), am, err, len(b), bm, err2)
		}
		for i := range a {
			if a[i].ID != b[i].ID {
				t.Fatalf("%+v: row %d: list %s, scan %s", q, i, a[i].ID, b[i].ID)
			}
		}
	}
}

// benchPayload is an event as sinks send it (docs/events.schema.json), ≈ 420 bytes.
const benchPayload = `{"id":"01JNX7Q2M8C3Z5V6W7Y8Z9ABCD","type":"line.cross","stream":"cam07","pts":19.1,` +
	`"time":"2026-03-01T12:00:19.1Z","track_id":17,"label":"person","class_id":0,"score":0.91,` +
	`"box":[412.5,101.25,561,399.75],"line":"exit","direction":"out","has_clip":true,"has_snapshot":true,` +
	`"clip_url":"/api/evidence/01JNX7Q2M8C3Z5V6W7Y8Z9ABCD/clip.mp4",` +
	`"snapshot_url":"/api/evidence/01JNX7Q2M8C3Z5V6W7Y8Z9ABCD/snapshot.jpg"}`

// BenchmarkIndexList lists pages of a store of 100 000 events over 50 streams (a week, one
// every 6 s; 1 % zone.loiter) through list (by bucket) and listScan (the scan it replaced),
// side by side, and the by bucket built from scratch (an older index.db at open):
// go test -run XXX -bench IndexList -benchmem ./evidence
func BenchmarkIndexList(b *testing.B) {
	const n, streams = 100000, 50
	rng := rand.New(rand.NewPCG(9, 10))
	rows := randomRows(rng, n, streams, int((7 * 24 * time.Hour).Milliseconds()), benchPayload)
	x := testIndex(b)
	for i := 0; i < n; i += 1000 {
		if err := x.putRows(rows[i : i+1000]); err != nil {
			b.Fatal(err)
		}
	}
	x.db.NoSync = false
	end := rows[n-1].ID.Time()
	cases := []struct {
		name string
		q    Query
	}{
		{"all", Query{}},
		{"stream", Query{Stream: "cam07"}},
		{"stream/missing", Query{Stream: "cam99"}},
		{"type/rare", Query{Type: "zone.loiter"}},
		{"stream+type/rare", Query{Stream: "cam07", Type: "zone.loiter"}},
		{"stream/since 1h", Query{Stream: "cam07", Since: end.Add(-time.Hour)}},
		{"stream/until first day", Query{Stream: "cam07", Until: listT0.Add(24 * time.Hour)}},
		{"stream/cursor mid", Query{Stream: "cam07", Before: rows[n/2].ID}},
	}
	for _, c := range cases {
		for _, impl := range []struct {
			name string
			list func(*index, Query) ([]Row, []*Clip, bool, error)
		}{{"index", (*index).list}, {"scan", listScan}} {
			b.Run(c.name+"/"+impl.name, func(b *testing.B) {
				got := 0
				for b.Loop() {
					rows, _, _, err := impl.list(x, c.q)
					if err != nil {
						b.Fatal(err)
					}
					got = len(rows)
				}
				b.ReportMetric(float64(got), "rows/op")
			})
		}
	}
	// Opening an index.db from before the by bucket: the whole store indexed once.
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if err := x.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketBy) }); err != nil {
				b.Fatal(err)
			}
			if _, err := byBuild(x.db); err != nil {
				b.Fatal(err)
			}
		}
	})
}
