package sourcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// StatsReader is a source as the pipeline reads it, with its counters for failure reports.
type StatsReader[S any] interface {
	Read(ctx context.Context) (*media.AccessUnit, error)
	Stats() S
}

// DecodePTS reads n access units from src (60 s overall) and decodes them as the pipeline
// does (pictures with concealed errors dropped); it returns the decoded frames' PTS in
// output order.
func DecodePTS[S any](t testing.TB, src StatsReader[S], c media.Codec, n int) []time.Duration {
	t.Helper()
	dec := &codec.Decoder{Codec: c}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var pts []time.Duration
	emit := func(f *frame.Frame) error { pts = append(pts, f.PTS); f.Release(); return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read %d: %v (stats %+v)", i, err, src.Stats())
		}
		if err := dec.Decode(ctx, au, emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatal(err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	return pts
}

// CheckPTSOrder reports each decoded frame whose PTS goes backwards.
func CheckPTSOrder(t testing.TB, pts []time.Duration) {
	t.Helper()
	for i := 1; i < len(pts); i++ {
		if pts[i] < pts[i-1] {
			t.Errorf("frame %d: PTS %v after %v", i, pts[i], pts[i-1])
		}
	}
}

// NextKey returns the index of the first key sample at or after i, or n when none is before n.
func (c *Clip) NextKey(i, n int) int {
	for i < n && !c.Samples[i].Key {
		i++
	}
	return i
}
