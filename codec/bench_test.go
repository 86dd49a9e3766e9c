package codec_test

import (
	"context"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/source/file"
)

// decodeFile reads and decodes a whole file with one thread, returning the frame count and the
// time spent after Init (as ffmpeg's rtime, which excludes opening the input).
func decodeFile(b *testing.B, path string, threads int) (int, time.Duration) {
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dec := &codec.Decoder{Codec: src.Info().Codec, Threads: threads}
	if err := dec.Init(); err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	n := 0
	emit := func(f *frame.Frame) error { n++; f.Release(); return nil }
	ctx := context.Background()
	start := time.Now()
	for {
		au, err := src.Read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := dec.Decode(ctx, au, emit); err != nil {
			b.Fatal(err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		b.Fatal(err)
	}
	return n, time.Since(start)
}

var (
	ffmpegFrameRe = regexp.MustCompile(`frame=\s*(\d+)`)
	ffmpegRtimeRe = regexp.MustCompile(`rtime=([0-9.]+)s`)
)

// ffmpegDecode runs `ffmpeg -benchmark -threads 1 -i path -f null -` and returns its frame count
// and rtime (decoding time, without process start and input probing).
func ffmpegDecode(b *testing.B, ffmpeg, path string, threads int) (int, time.Duration) {
	out, err := exec.Command(ffmpeg, "-hide_banner", "-nostdin", "-nostats", "-benchmark",
		"-threads", strconv.Itoa(threads), "-i", path, "-map", "0:v:0", "-f", "null", "-").CombinedOutput()
	if err != nil {
		b.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	fm, rm := ffmpegFrameRe.FindAllSubmatch(out, -1), ffmpegRtimeRe.FindSubmatch(out)
	if len(fm) == 0 || rm == nil {
		b.Fatalf("no frame count or rtime in ffmpeg's output:\n%s", out)
	}
	n, _ := strconv.Atoi(string(fm[len(fm)-1][1]))
	secs, _ := strconv.ParseFloat(string(rm[1]), 64)
	return n, time.Duration(secs * float64(time.Second))
}

// BenchmarkDecodeVsFFmpeg decodes one-by-one-person-detection.mp4 (768×432 H.264 Main with
// B-frames, 1394 frames) with one thread through source/file and Decoder, and with the ffmpeg
// program in the same iteration. Metrics: vinfer-fps, ffmpeg-fps and their ratio (vinfer/ffmpeg;
// 1.0 means no overhead over FFmpeg's own demux and decode loop).
func BenchmarkDecodeVsFFmpeg(b *testing.B) {
	path := asset(b, "videos/one-by-one-person-detection.mp4")
	ffmpeg := tool(b, "ffmpeg")
	var ours, theirs int
	var oursT, theirsT time.Duration
	for b.Loop() {
		n, d := decodeFile(b, path, 1)
		m, e := ffmpegDecode(b, ffmpeg, path, 1)
		if n != m {
			b.Fatalf("vinfer decoded %d frames, ffmpeg %d", n, m)
		}
		ours, oursT, theirs, theirsT = ours+n, oursT+d, theirs+m, theirsT+e
	}
	vfps := float64(ours) / oursT.Seconds()
	ffps := float64(theirs) / theirsT.Seconds()
	b.ReportMetric(vfps, "vinfer-fps")
	b.ReportMetric(ffps, "ffmpeg-fps")
	b.ReportMetric(vfps/ffps, "ratio")
}

// BenchmarkDecode decodes the clip's access units from memory (no demuxing) and reports
// frames per second and allocations per frame, for one and four threads.
func BenchmarkDecode(b *testing.B) {
	info, aus := accessUnits(b, asset(b, "videos/one-by-one-person-detection.mp4"))
	for _, threads := range []int{1, 4} {
		b.Run("threads="+strconv.Itoa(threads), func(b *testing.B) {
			dec := &codec.Decoder{Codec: info.Codec, Threads: threads}
			if err := dec.Init(); err != nil {
				b.Fatal(err)
			}
			defer dec.Close()
			ctx := context.Background()
			frames := 0
			emit := func(f *frame.Frame) error { frames++; f.Release(); return nil }
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := dec.Decode(ctx, &aus[i], emit); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(aus) {
					if err := dec.Flush(ctx, emit); err != nil {
						b.Fatal(err)
					}
					i = 0
				}
			}
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "fps")
		})
	}
}
