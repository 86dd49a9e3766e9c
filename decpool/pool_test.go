package decpool_test

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// clip reads the sample's access units (768×432 H.264, 1 s GOPs with B-frames) through
// source/file, copying the data.
func clip(t testing.TB) []media.AccessUnit {
	t.Helper()
	src := &file.Source{Path: testutil.Asset(t, "videos/one-by-one-person-detection.mp4")}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var aus []media.AccessUnit
	for len(aus) < 400 {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = bytes.Clone(au.Data)
		aus = append(aus, c)
	}
	return aus
}

// keys returns the indexes of the key frames.
func keys(aus []media.AccessUnit) []int {
	var k []int
	for i := range aus {
		if aus[i].Key {
			k = append(k, i)
		}
	}
	return k
}

// ffmpeg makes FFmpeg decoders, counting them.
func ffmpeg(t testing.TB) func(media.Codec) (decpool.Decoder, error) {
	return func(c media.Codec) (decpool.Decoder, error) {
		d := &codec.Decoder{Codec: c}
		if err := d.Init(); err != nil {
			return nil, err
		}
		return d, nil
	}
}

// pictures records what a decoder emitted: PTS and a checksum of the luma plane.
type pictures struct {
	mu   sync.Mutex
	pts  []time.Duration
	sums []uint32
}

func (p *pictures) emit(f *frame.Frame) error {
	defer f.Release()
	h := crc32.NewIEEE()
	for y := 0; y < f.Height; y++ {
		h.Write(f.Planes[0][y*f.Strides[0] : y*f.Strides[0]+f.Width])
	}
	p.mu.Lock()
	p.pts = append(p.pts, f.PTS)
	p.sums = append(p.sums, h.Sum32())
	p.mu.Unlock()
	return nil
}

func decodeAll(t *testing.T, d decpool.Decoder, aus []media.AccessUnit, p *pictures) {
	t.Helper()
	for i := range aus {
		if err := d.Decode(context.Background(), &aus[i], p.emit); err != nil {
			t.Fatalf("access unit %d: %v", i, err)
		}
	}
	if err := d.Flush(context.Background(), p.emit); err != nil {
		t.Fatal(err)
	}
}

var sample = decpool.Key{Codec: media.CodecH264, Width: 768, Height: 432}

// TestProbeShared: the key frames of 24 idle streams, probed at once from 24 goroutines, are
// each decoded alone into their own picture by at most Probers shared decoders (not one per
// stream), each picture equal to the one a full decode of the clip gives.
func TestProbeShared(t *testing.T) {
	aus := clip(t)
	ks := keys(aus)
	if len(ks) < 4 {
		t.Fatalf("%d key frames", len(ks))
	}
	var ref pictures
	d, _ := ffmpeg(t)(media.CodecH264)
	decodeAll(t, d, aus, &ref)
	d.Close()
	want := map[time.Duration]uint32{}
	for i, p := range ref.pts {
		want[p] = ref.sums[i]
	}

	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 2, Warm: -1})
	if err != nil {
		t.Fatal(err)
	}
	const streams = 24
	got := make([]pictures, streams)
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			au := aus[ks[i%len(ks)]]
			errs[i] = pool.Probe(context.Background(), sample, &au, got[i].emit)
		}()
	}
	wg.Wait()
	for i := range streams {
		au := aus[ks[i%len(ks)]]
		if errs[i] != nil {
			t.Errorf("stream %d: %v", i, errs[i])
			continue
		}
		if len(got[i].pts) != 1 || got[i].pts[0] != au.PTS || got[i].sums[0] != want[au.PTS] {
			t.Errorf("stream %d: pictures %v (sums %x), want the key frame at %v (sum %x)", i, got[i].pts, got[i].sums, au.PTS, want[au.PTS])
		}
	}
	st := pool.Stats()
	if st.Created > 2 || st.Probers > 2 || st.Probes != streams {
		t.Errorf("stats %+v: want ≤ 2 decoders for %d probes", st, streams)
	}
	pool.Close()
	if st := pool.Stats(); st.Closed != st.Created || st.Probers != 0 {
		t.Errorf("after Close: %+v", st)
	}
}

// TestWakeReplay: a stream decodes a GOP on a decoder it took, gives it back when it goes
// idle, has its next key frame probed on a shared decoder, and on waking is handed the warm
// decoder it gave back (no decoder made) on which the held GOP, replayed in a burst, gives
// the same pictures as the full decode; a second wake gets a decoder the pool made ahead,
// primed with the probed key frame.
func TestWakeReplay(t *testing.T) {
	aus := clip(t)
	ks := keys(aus)
	if len(ks) < 4 {
		t.Fatalf("%d key frames", len(ks))
	}
	var ref pictures
	d0, _ := ffmpeg(t)(media.CodecH264)
	decodeAll(t, d0, aus[ks[2]:ks[3]], &ref)
	d0.Close()

	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	first, err := pool.Take(ctx, decpool.Key{Codec: media.CodecH264})
	if err != nil {
		t.Fatal(err)
	}
	var p0 pictures
	decodeAll(t, first, aus[ks[0]:ks[1]], &p0)
	pool.Put(sample, first, true) // idle: the stream holds no decoder
	var probe pictures
	if err := pool.Probe(ctx, sample, &aus[ks[2]], probe.emit); err != nil || len(probe.pts) != 1 {
		t.Fatalf("probe: %v, %d pictures", err, len(probe.pts))
	}
	before := pool.Stats()
	woken, err := pool.Take(ctx, sample)
	if err != nil {
		t.Fatal(err)
	}
	var burst pictures
	decodeAll(t, woken, aus[ks[2]:ks[3]], &burst)
	if st := pool.Stats(); st.Handouts != 1 || st.Cold != before.Cold {
		t.Errorf("wake: stats %+v after %+v: want the warm decoder handed out, none made for it", st, before)
	}
	if len(burst.pts) != len(ref.pts) {
		t.Fatalf("burst: %d pictures, full decode %d", len(burst.pts), len(ref.pts))
	}
	for i := range ref.pts {
		if burst.pts[i] != ref.pts[i] || burst.sums[i] != ref.sums[i] {
			t.Errorf("burst picture %d: pts %v sum %x, full decode %v %x", i, burst.pts[i], burst.sums[i], ref.pts[i], ref.sums[i])
		}
	}
	// the pool makes a warm decoder ahead for the next wake
	testutil.Eventually(t, 20*time.Second, "a warm decoder made ahead", func() bool { return pool.Stats().Warm == 1 })
	again, err := pool.Take(ctx, sample)
	if err != nil {
		t.Fatal(err)
	}
	var burst2 pictures
	decodeAll(t, again, aus[ks[2]:ks[3]], &burst2)
	if st := pool.Stats(); st.Handouts != 2 || st.Cold != 1 || st.Taken != 2 {
		t.Errorf("second wake: %+v", st)
	}
	if len(burst2.pts) != len(ref.pts) || burst2.sums[len(ref.sums)-1] != ref.sums[len(ref.sums)-1] {
		t.Errorf("second burst: %d pictures, want %d equal to the full decode", len(burst2.pts), len(ref.pts))
	}
	// a new stream (size unknown yet) is handed a warm decoder of its codec too
	testutil.Eventually(t, 20*time.Second, "a warm decoder made ahead", func() bool { return pool.Stats().Warm == 1 })
	fresh, err := pool.Take(ctx, decpool.Key{Codec: media.CodecH264})
	if err != nil {
		t.Fatal(err)
	}
	if st := pool.Stats(); st.Handouts != 3 || st.Cold != 1 {
		t.Errorf("new stream: %+v, want a warm decoder", st)
	}
	var first2 pictures
	decodeAll(t, fresh, aus[ks[0]:ks[1]], &first2)
	if len(first2.pts) != len(p0.pts) || first2.sums[0] != p0.sums[0] {
		t.Errorf("new stream on a warm decoder: %d pictures, want %d as decoded before", len(first2.pts), len(p0.pts))
	}
	pool.Drop(woken)
	pool.Drop(again)
	pool.Drop(fresh)
}

// TestProbeBusy: with its one shared decoder held by a probe whose picture is not consumed,
// another stream's probe gives up after Wait with ErrBusy, counted, instead of waiting on.
func TestProbeBusy(t *testing.T) {
	aus := clip(t)
	ks := keys(aus)
	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: -1, Wait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	hold, held := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- pool.Probe(context.Background(), sample, &aus[ks[0]], func(f *frame.Frame) error {
			close(held)
			<-hold
			f.Release()
			return nil
		})
	}()
	<-held
	err = pool.Probe(context.Background(), sample, &aus[ks[1]], func(f *frame.Frame) error { f.Release(); return nil })
	if !errors.Is(err, decpool.ErrBusy) || pool.Stats().Busy != 1 {
		t.Errorf("second probe: %v, stats %+v; want ErrBusy, counted", err, pool.Stats())
	}
	close(hold)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestPoolBadInputAndClose: a damaged key frame fails its probe with the decoder's error and
// leaves the shared decoder usable for the next stream's probe; after Close, probes and takes
// are refused (ErrClosed), a decoder given back is closed, and every decoder made was closed.
func TestPoolBadInputAndClose(t *testing.T) {
	aus := clip(t)
	ks := keys(aus)
	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bad := media.AccessUnit{Codec: media.CodecH264, Key: true, Data: bytes.Repeat([]byte{0, 0, 0, 1, 0x65, 0xff}, 50)}
	var none pictures
	if err := pool.Probe(ctx, sample, &bad, none.emit); err == nil || len(none.pts) != 0 {
		t.Errorf("damaged key frame: %v, %d pictures; want the decoder's error, none", err, len(none.pts))
	}
	var good pictures
	if err := pool.Probe(ctx, sample, &aus[ks[1]], good.emit); err != nil || len(good.pts) != 1 {
		t.Errorf("next probe on the same shared decoder: %v, %d pictures", err, len(good.pts))
	}
	if st := pool.Stats(); st.Created != 1 || st.Probes != 2 {
		t.Errorf("stats %+v: want one shared decoder for both probes", st)
	}
	taken, err := pool.Take(ctx, sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Probe(ctx, sample, &aus[ks[0]], none.emit); !errors.Is(err, decpool.ErrClosed) {
		t.Errorf("probe after Close: %v", err)
	}
	if _, err := pool.Take(ctx, sample); !errors.Is(err, decpool.ErrClosed) {
		t.Errorf("take after Close: %v", err)
	}
	pool.Put(sample, taken, true) // a stream going idle as the app stops
	testutil.Eventually(t, 20*time.Second, "every decoder closed", func() bool {
		st := pool.Stats()
		return st.Closed == st.Created && st.Taken == 0 && st.Warm == 0 && st.Probers == 0
	})
}
