package outbox

import (
	"log/slog"
	"runtime"
	"testing"
	"time"
)

// BenchmarkAppend measures Append of 1 KiB records under each fsync policy, from one
// goroutine and from 8 (group commit; 8 when GOMAXPROCS divides 8).
func BenchmarkAppend(b *testing.B) {
	rec := make([]byte, 1024)
	for _, tc := range []struct {
		name  string
		fsync FsyncPolicy
	}{
		{"fsync=always", FsyncAlways},
		{"fsync=10ms", FsyncInterval},
		{"fsync=never", FsyncNever},
	} {
		for _, par := range []int{1, 8} {
			b.Run(tc.name+"/goroutines="+itoa(par), func(b *testing.B) {
				o := &Outbox{Dir: b.TempDir(), Fsync: tc.fsync, FsyncEvery: 10 * time.Millisecond,
					MaxBytes: 8 << 30, Logger: slog.New(slog.DiscardHandler)}
				if err := o.Init(); err != nil {
					b.Fatal(err)
				}
				defer o.Close()
				b.SetBytes(int64(len(rec)))
				b.SetParallelism(max(1, par/runtime.GOMAXPROCS(0)))
				start := time.Now()
				if par == 1 {
					for b.Loop() {
						if _, err := o.Append(rec); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := o.Append(rec); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
				if err := o.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
				b.ReportMetric(float64(o.Stats().Syncs)/float64(b.N), "fsyncs/record")
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
