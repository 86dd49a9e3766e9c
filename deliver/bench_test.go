package deliver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/outbox"
)

// BenchmarkDeliver measures delivery of 1 KiB records already in the outbox (page cache) to an
// in-process publisher that only counts them, cursor persisted every 100 ms with fsync.
func BenchmarkDeliver(b *testing.B) {
	o := &outbox.Outbox{Dir: b.TempDir(), MaxBytes: 8 << 30, Logger: slog.New(slog.DiscardHandler)}
	if err := o.Init(); err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	rec := make([]byte, 1024)
	for range b.N {
		if _, err := o.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
	o.Sync()
	var n atomic.Int64
	done := make(chan struct{})
	p := PublisherFunc(func(_ context.Context, recs []outbox.Record) (int, error) {
		if n.Add(int64(len(recs))) == int64(b.N) {
			close(done)
		}
		return len(recs), nil
	})
	b.SetBytes(int64(len(rec)))
	b.ResetTimer()
	start := time.Now()
	w := &Worker{Name: "bench", Outbox: o, Publisher: p, Logger: slog.New(slog.DiscardHandler)}
	if err := w.Init(); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	w.Close()
}
