package decpool_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// luma returns a checksum of f's luma plane (host memory).
func luma(f *frame.Frame) uint32 {
	h := crc32.NewIEEE()
	for y := 0; y < f.Height; y++ {
		h.Write(f.Planes[0][y*f.Strides[0] : y*f.Strides[0]+f.Width])
	}
	return h.Sum32()
}

// TestNVDECProbeTimes (GPU; the issue 30 probe micro-benchmark, no ONNX Runtime): times idle
// key-frame probes on 1 and on 4 shared NVDEC decoders (a decpool.Pool, twice as many
// goroutines as decoders probing at once), the old way (Config.Drain: decode, end-of-stream
// drain, reset) and the new (ProbeKey), per phase (send, push, drain) with the decoder
// set-ups they cost, on each clip of $VINFER_PROBE30_CLIPS (comma-separated; default the
// bundled sample). Each configuration runs $VINFER_PROBE30_N probes (300) or 6 s, whichever
// ends first. First, every key frame probed the new way on one decoder must give the software
// decoder's picture (luma compared). Rows go to the log and, as CSV, to $VINFER_PROBE30_CSV.
// Skipped without a CUDA device; VINFER_PROBE30_DECODER=cpu runs it with FFmpeg's software
// decoder instead (a dry run of the benchmark on a machine without a GPU).
func TestNVDECProbeTimes(t *testing.T) {
	newDec := ffmpeg(t)
	if os.Getenv("VINFER_PROBE30_DECODER") != "cpu" {
		dev, err := cuda.Open(0)
		if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
			t.Skipf("no CUDA device: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		newDec = func(c media.Codec) (decpool.Decoder, error) {
			d := &codec.NVDECStream{Device: dev, Codec: c, Shared: true}
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	var paths []string
	if v := os.Getenv("VINFER_PROBE30_CLIPS"); v != "" {
		paths = strings.Split(v, ",")
	} else {
		paths = []string{filepath.Join("..", "assets", "videos", "one-by-one-person-detection.mp4")}
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("VINFER_PROBE30_N")); err == nil && v > 0 {
		n = v
	}
	const perConfig = 6 * time.Second
	var csv strings.Builder
	csv.WriteString("clip,mode,decoders,probes,wall_s,probes_per_s,probe_ms_mean,probe_ms_p50,probe_ms_p99,send_ms_mean,push_ms_mean,drain_ms_mean,drains,pushes,setups,busy,created\n")
	for _, path := range paths {
		c := loadCamera(t, path)
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		k := decpool.Key{Codec: c.aus[0].Codec}

		// pictures first: each key frame probed the new way equals the software decode
		pool, err := decpool.New(decpool.Config{New: newDec, Probers: 1, Warm: -1})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 2; round++ {
			for _, i := range c.keys {
				au := c.aus[i]
				var sums []uint32
				err := pool.Probe(context.Background(), k, &au, func(f *frame.Frame) error {
					defer f.Release()
					h, err := frame.ToHost(f)
					if err != nil {
						return err
					}
					sums = append(sums, luma(h))
					h.Release()
					return nil
				})
				if err != nil || len(sums) != 1 {
					t.Fatalf("%s: key frame at %v: %v, %d pictures", name, au.PTS, err, len(sums))
				}
				if sums[0] != c.lumaWant[au.PTS] {
					t.Fatalf("%s: key frame at %v: NVDEC's luma differs from the software decoder's", name, au.PTS)
				}
			}
		}
		t.Logf("%s: %d key frames probed twice on one NVDEC decoder, pictures equal to the software decoder's; %+v", name, len(c.keys), pool.Stats())
		pool.Close()

		for _, decoders := range []int{1, 4} {
			for _, drain := range []bool{true, false} {
				mode := "new"
				if drain {
					mode = "old"
				}
				pool, err := decpool.New(decpool.Config{New: newDec, Probers: decoders, Warm: -1, Drain: drain, Wait: 30 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				// the decoders are made outside the timing: one probe each, at once
				var wg sync.WaitGroup
				for g := 0; g < decoders; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						au := c.aus[c.keys[g%len(c.keys)]]
						pool.Probe(context.Background(), k, &au, func(f *frame.Frame) error { f.Release(); return nil })
					}()
				}
				wg.Wait()
				base := pool.Stats()
				var next atomic.Int64
				var mu sync.Mutex
				var lat []time.Duration
				var failed error
				deadline := time.Now().Add(perConfig)
				t0 := time.Now()
				for g := 0; g < 2*decoders; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var mine []time.Duration
						for time.Now().Before(deadline) {
							j := next.Add(1) - 1
							if j >= int64(n) {
								break
							}
							au := c.aus[c.keys[int(j)%len(c.keys)]]
							s := time.Now()
							err := pool.Probe(context.Background(), k, &au, func(f *frame.Frame) error { f.Release(); return nil })
							mine = append(mine, time.Since(s))
							if err != nil {
								mu.Lock()
								failed = cmpErr(failed, err)
								mu.Unlock()
							}
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					}()
				}
				wg.Wait()
				wall := time.Since(t0)
				st := pool.Stats()
				pool.Close()
				if failed != nil {
					t.Errorf("%s %s %d decoders: %v", name, mode, decoders, failed)
				}
				probes := st.Probes - base.Probes
				if probes == 0 {
					t.Fatalf("%s %s %d decoders: no probe in %v", name, mode, decoders, perConfig)
				}
				slices.Sort(lat)
				ms := func(ns int64) float64 { return float64(ns) / 1e6 / float64(probes) }
				row := fmt.Sprintf("%s,%s,%d,%d,%.2f,%.1f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%d,%d,%d,%d,%d",
					name, mode, decoders, probes, wall.Seconds(), float64(probes)/wall.Seconds(),
					ms(st.ProbeNanos-base.ProbeNanos), float64(lat[len(lat)/2])/1e6, float64(lat[len(lat)*99/100])/1e6,
					ms(st.SendNanos-base.SendNanos), ms(st.PushNanos-base.PushNanos), ms(st.DrainNanos-base.DrainNanos),
					st.ProbeDrains-base.ProbeDrains, st.ProbePushes-base.ProbePushes, st.ProbeSetups-base.ProbeSetups,
					st.Busy-base.Busy, st.Created)
				t.Log(row)
				csv.WriteString(row + "\n")
			}
		}
	}
	if p := os.Getenv("VINFER_PROBE30_CSV"); p != "" {
		if err := os.WriteFile(p, []byte(csv.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
