package gb28181

import (
	"context"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181/ps"
	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/timestamp"
)

// BenchmarkReceive measures the receive path of a GB28181 stream without sockets: RTP parsing,
// reordering, PS demuxing, access-unit assembly and the hand-off to Read, for 120 frames of
// car-detection.mp4 per op.
func BenchmarkReceive(b *testing.B) {
	c := sourcetest.LoadClip(b, clips[0])
	snd := newSender(c, 1, ps.Quirks{})
	span := c.Samples[120].DTS - c.Samples[0].DTS
	var pkts [][]byte
	var bytes int64
	build := func() { // the next 120 frames: the stream goes on
		pkts = pkts[:0]
		bytes = 0
		for i := range 120 {
			for _, p := range snd.packets(i) {
				pkts = append(pkts, p)
				bytes += int64(len(p))
			}
		}
		snd.shift += span
	}
	build()
	pool := udpmux.NewPool(8)
	q := live.NewQueue(4)
	var st live.Counters
	clock := timestamp.Clock{Rate: rtp.ClockRate}
	if err := clock.Init(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	aus := 0
	d := psDepacketizer{clock: &clock, stats: &st, deliver: func(au *media.AccessUnit) bool {
		aus++
		ok := q.Push(au)
		_, _ = q.Pop(ctx)
		return ok
	}}
	d.init()
	recv := rtp.Receiver{Stats: &st, Handler: &d, Release: pool.Put}
	now := time.Now()
	if err := recv.Init(now); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pkts {
			dg := pool.Get()
			dg.SetBytes(p)
			dg.At = now
			recv.Handle(dg)
		}
		b.StopTimer()
		build()
		b.StartTimer()
	}
	b.ReportMetric(float64(aus)/float64(b.N), "AUs/op")
	if st.Lost.Load() != 0 || st.Dropped.Load() != 0 {
		b.Fatalf("stats %+v", st.Snapshot())
	}
}
