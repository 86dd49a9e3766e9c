package reslog_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/reslog"
)

// BenchmarkLog logs 5 tracked objects a frame at 25 fps and reports the log's bytes per frame,
// their share of the video's bytes (videoBitrate below), and the share of one core 100
// streams of 25 fps take.
//
//	go test -run '^$' -bench BenchmarkLog -benchtime 15000x ./reslog/
func BenchmarkLog(b *testing.B) {
	const (
		fps          = 25
		streams      = 100
		videoBitrate = 1_000_000 // bit/s: a 720p camera's substream-to-main range starts here
	)
	dir := b.TempDir()
	l := &reslog.Log{Dir: dir}
	if err := l.Init(); err != nil {
		b.Fatal(err)
	}
	s := newScene("cam1", 5)
	rs := make([]*resultCopy, 0, b.N)
	for range b.N { // the results are made before the clock runs
		rs = append(rs, copyResult(s.next()))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := l.Write(rs[i].r()); err != nil {
			b.Fatal(err)
		}
	}
	l.Flush()
	b.StopTimer()
	l.Close()
	var size int64
	files, _ := filepath.Glob(filepath.Join(dir, "cam1", "*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	perFrame := float64(size) / float64(b.N)
	b.ReportMetric(perFrame, "B/frame")
	b.ReportMetric(100*perFrame/(videoBitrate/8/fps), "%video@1Mbit/s")
	nsPerFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(100*nsPerFrame*fps*streams/float64(time.Second), "%core@100x25fps")
}
