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
	newDec := gpuDecoders(t)
	paths := probeClips()
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

// TestNVDECProbeHeldFrame (GPU; issue 30): a probe whose picture its consumer keeps (an idle
// stream's frame waiting for the detector) returns once the picture is out, on a shared
// decoder whose frame pool has one frame: it does not wait for a free frame only to learn that
// nothing more came out (it used to, until its context ended, holding the shared decoder).
// Both clips' key frames; VINFER_PROBE30_DECODER=cpu runs it on FFmpeg's decoder.
func TestNVDECProbeHeldFrame(t *testing.T) {
	newDec := gpuDecoders(t, 1)
	for _, path := range probeClips() {
		c := loadCamera(t, path)
		pool, err := decpool.New(decpool.Config{New: newDec, Probers: 1, Warm: -1})
		if err != nil {
			t.Fatal(err)
		}
		k := decpool.Key{Codec: c.aus[0].Codec}
		for _, i := range c.keys[:min(3, len(c.keys))] {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			var held *frame.Frame
			err := pool.Probe(ctx, k, &c.aus[i], func(f *frame.Frame) error {
				if held != nil {
					f.Release()
					return fmt.Errorf("a second picture")
				}
				held = f
				return nil
			})
			cancel()
			if err != nil || held == nil {
				t.Fatalf("%s: key frame at %v with its picture kept: %v (picture: %v)", filepath.Base(path), c.aus[i].PTS, err, held != nil)
			}
			held.Release()
		}
		pool.Close()
	}
}

// gpuDecoders returns a maker of shared NVDEC decoders on GPU 0 with frames frames (0: the
// default), skipping the test without a GPU, or of FFmpeg's software decoders with
// VINFER_PROBE30_DECODER=cpu.
func gpuDecoders(t *testing.T, frames ...int) func(media.Codec) (decpool.Decoder, error) {
	if os.Getenv("VINFER_PROBE30_DECODER") == "cpu" {
		n := 0
		if len(frames) > 0 {
			n = frames[0]
		}
		return func(c media.Codec) (decpool.Decoder, error) {
			d := &codec.Decoder{Codec: c, Frames: n}
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	dev, err := cuda.Open(0)
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return func(c media.Codec) (decpool.Decoder, error) {
		d := &codec.NVDECStream{Device: dev, Codec: c, Shared: true}
		if len(frames) > 0 {
			d.Frames = frames[0]
		}
		if err := d.Init(); err != nil {
			return nil, err
		}
		return d, nil
	}
}

// probeClips returns the clips of $VINFER_PROBE30_CLIPS, else the bundled sample.
func probeClips() []string {
	if v := os.Getenv("VINFER_PROBE30_CLIPS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{filepath.Join("..", "assets", "videos", "one-by-one-person-detection.mp4")}
}

// TestNVDECParkWake (GPU; issue 30): a stream's wakes on a decoder it gave back when it went
// idle. For each clip of $VINFER_PROBE30_CLIPS and each way of giving the decoder back (flush:
// the old end-of-stream drain and reset; park: Parker.Park, which keeps it set up), 12 turns
// of: take the pool's warm decoder, decode one GOP, give it back. Per turn: the time from the
// take to the GOP's first picture (what a wake's first result waits for) and to its last, and
// the decoder's set-ups; each GOP's first and last pictures' luma equals the software
// decoder's (downloaded: included in the GOP's time). Rows to the log
// and, as CSV, to $VINFER_PROBE30_WAKE_CSV. VINFER_PROBE30_DECODER=cpu: a dry run on FFmpeg.
func TestNVDECParkWake(t *testing.T) {
	newDec := gpuDecoders(t)
	var csv strings.Builder
	csv.WriteString("clip,way,wakes,first_ms_mean,first_ms_max,gop_ms_mean,setups\n")
	for _, path := range probeClips() {
		c := loadCamera(t, path)
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		gops := len(c.keys) - 1
		if gops < 1 {
			t.Fatalf("%s: %d key frames", name, len(c.keys))
		}
		for _, way := range []string{"flush", "park"} {
			pool, err := decpool.New(decpool.Config{New: newDec, Probers: 1, Warm: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			k := decpool.Key{Codec: c.aus[0].Codec}
			var firstSum, firstMax, gopSum time.Duration
			var setups int64
			const turns = 12
			for turn := range turns {
				d, err := pool.Take(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				g := turn % gops
				t0 := time.Now()
				var first time.Duration
				n := 0
				emit := func(f *frame.Frame) error {
					defer f.Release()
					if n == 0 {
						first = time.Since(t0)
					}
					n++
					if n > 1 && n < c.keys[g+1]-c.keys[g] {
						return nil // the first and last pictures are compared (a download each)
					}
					h, err := frame.ToHost(f)
					if err != nil {
						return err
					}
					defer h.Release()
					if luma(h) != c.lumaWant[f.PTS] {
						return fmt.Errorf("picture at %v: luma differs from the software decoder's", f.PTS)
					}
					return nil
				}
				for i := c.keys[g]; i < c.keys[g+1]; i++ {
					if err := d.Decode(ctx, &c.aus[i], emit); err != nil {
						t.Fatalf("%s %s turn %d: %v", name, way, turn, err)
					}
				}
				if way == "park" {
					err = d.(decpool.Parker).Park(ctx, emit)
				} else {
					err = d.Flush(ctx, emit)
				}
				gop := time.Since(t0)
				if err != nil || n != c.keys[g+1]-c.keys[g] {
					t.Fatalf("%s %s turn %d: %v, %d pictures for %d access units", name, way, turn, err, n, c.keys[g+1]-c.keys[g])
				}
				if turn > 0 { // the first turn makes the decoder
					firstSum += first
					firstMax = max(firstMax, first)
					gopSum += gop
				}
				if sc, ok := d.(interface{ Setups() int64 }); ok {
					setups = sc.Setups()
				}
				pool.Put(decpool.Key{Codec: k.Codec, Width: 1, Height: 1}, d, true) // kept warm under one key
				k = decpool.Key{Codec: k.Codec, Width: 1, Height: 1}
			}
			pool.Close()
			w := turns - 1
			row := fmt.Sprintf("%s,%s,%d,%.2f,%.2f,%.2f,%d", name, way, w, float64(firstSum)/1e6/float64(w),
				float64(firstMax)/1e6, float64(gopSum)/1e6/float64(w), setups)
			t.Log(row)
			csv.WriteString(row + "\n")
		}
	}
	if p := os.Getenv("VINFER_PROBE30_WAKE_CSV"); p != "" {
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
