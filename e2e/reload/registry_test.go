package reload_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/vinfer/vinfer/internal/apptest"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/internal/memstat"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

// carFrames is the frame count of car-detection.mp4 and its remux (MANIFEST.md §2).
const carFrames = 377

// shortFrames: the clips cut for TestReloadUnderLoadLosesNothing, two GOPs (no B-frames).
const shortFrames = 120

// results is a sink keeping, per stream, each result's frame index and a digest of its
// detections, in arrival order.
type results struct {
	mu     sync.Mutex
	frames map[string][]int64
	dets   map[string][]string
}

func (r *results) Write(res *sink.Result) error {
	d := describe(res.Detections) // res is reused after Write returns
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frames == nil {
		r.frames, r.dets = map[string][]int64{}, map[string][]string{}
	}
	r.frames[res.Stream] = append(r.frames[res.Stream], res.Frame)
	r.dets[res.Stream] = append(r.dets[res.Stream], d)
	return nil
}

func (r *results) count(stream string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames[stream])
}

type logBuffer = testutil.LogBuffer

// startApp runs vinfer with decl as model "m" (cache in cacheDir, "" for none) and frame
// accounting checks on, and adds the streams (model "m").
func startApp(t testing.TB, decl config.Model, cacheDir string, streams ...config.Stream) (*app.App, *results, *logBuffer) {
	t.Helper()
	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })
	decl.Name = "m"
	logs := &logBuffer{}
	rec := &results{}
	a := apptest.MustApp(t, &config.Config{Models: []config.Model{decl}}, app.Options{
		Sinks: []sink.Sink{rec}, Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	a.Registry.CacheDir = cacheDir
	for _, s := range streams {
		s.Model = "m"
		if err := a.AddStream(s); err != nil {
			a.Stop()
			t.Fatal(err)
		}
	}
	return a, rec, logs
}

// stop stops the app and checks that no frame leaked and every model version was freed.
func stop(t testing.TB, a *app.App, logs *logBuffer) []pipeline.StreamStatus {
	t.Helper()
	streams := a.Pipeline.Streams()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); strings.Contains(l, "never released") || strings.Contains(l, "double Release") {
		t.Fatalf("frame accounting: %s", l)
	}
	if n := a.Registry.Versions(); n != 0 {
		t.Errorf("%d model versions still hold a session after Stop", n)
	}
	return streams
}

func video(t testing.TB, name string) string { return filepath.Join(assets(t), "videos", name) }

// copyModel copies a bundled model into a temporary directory (for tests that replace it).
func copyModel(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(assets(t), "models", name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replace puts data at path through a rename, as deployment tools do.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentFirstUseLoadsOnce: many callers asking for a cold model at once share one
// load, through the registry and through streams added at once.
func TestConcurrentFirstUseLoadsOnce(t *testing.T) {
	t.Run("registry", func(t *testing.T) {
		decl := yoloxDecl(t)
		r := model.NewRegistry([]config.Model{decl})
		r.CacheDir = ""
		defer r.Close()
		const n = 16
		entries := make([]*model.Entry, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				entries[i], errs[i] = r.Get(decl.Name)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if entries[i] != entries[0] {
				t.Fatalf("caller %d got another entry", i)
			}
		}
		if l, rl := entries[0].Loads(), r.Loads(); l != 1 || rl != 1 {
			t.Errorf("%d concurrent first uses: entry loads %d, registry loads %d; want 1", n, l, rl)
		}
	})
	t.Run("streams", func(t *testing.T) {
		a, rec, logs := startApp(t, yoloxDecl(t), "")
		const n = 4
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				err := a.AddStream(config.Stream{ID: fmt.Sprint("s", i), Model: "m", Interval: 10,
					Source: video(t, "car-detection.mp4")})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		a.Pipeline.Wait()
		if l := a.Registry.Loads(); l != 1 {
			t.Errorf("%d streams starting at once: %d loads, want 1", n, l)
		}
		for _, s := range stop(t, a, logs) {
			// Interval 10 infers frames 0, 10, …, 370.
			if d, i := s.Stats.Decoded.Load(), s.Stats.Inferred.Load(); d != carFrames || i != 38 || rec.count(s.ID) != 38 {
				t.Errorf("%s: decoded %d inferred %d results %d, want %d/38/38", s.ID, d, i, rec.count(s.ID), carFrames)
			}
		}
	})
}

// TestReloadUnderLoadLosesNothing: two blocking file streams run while the model is reloaded
// again and again. Every frame of both streams gets a result, in order, none dropped; the two
// streams (the same video, MP4 and its MPEG-TS remux) get identical detections frame by frame
// although the reloads hit them at different frames; every retired version is freed.
func TestReloadUnderLoadLosesNothing(t *testing.T) {
	a, rec, logs := startApp(t, yoloxDecl(t), t.TempDir(),
		config.Stream{ID: "mp4", Source: testutil.ShortClip(t, "videos/car-detection.mp4", shortFrames), Drop: config.DropBlock},
		config.Stream{ID: "ts", Source: testutil.ShortClip(t, "videos/car-detection_remux.ts", shortFrames), Drop: config.DropBlock})
	e := a.Registry.Loaded("m")
	if e == nil {
		t.Fatal("model not loaded by AddStream")
	}
	done := make(chan struct{})
	go func() { a.Pipeline.Wait(); close(done) }()
	reloads := 0
	maxVersions := int64(0)
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			if err := e.Reload(); err != nil {
				t.Fatal(err)
			}
			reloads++
			maxVersions = max(maxVersions, a.Registry.Versions())
			time.Sleep(100 * time.Millisecond) // leave the streams most of the cores
		}
	}
	streams := stop(t, a, logs)
	if reloads < 3 {
		t.Fatalf("only %d reloads while the streams ran", reloads)
	}
	if l := e.Loads(); l != int64(1+reloads) {
		t.Errorf("loads %d, want 1 + %d reloads", l, reloads)
	}
	for _, s := range streams {
		d, n, dr := s.Stats.Decoded.Load(), s.Stats.Inferred.Load(), s.Stats.DroppedTotal()
		if d != shortFrames || n != shortFrames || dr != 0 || rec.count(s.ID) != shortFrames {
			t.Errorf("%s: decoded %d inferred %d dropped %d results %d, want %d/%d/0/%d",
				s.ID, d, n, dr, rec.count(s.ID), shortFrames, shortFrames, shortFrames)
		}
		for i, f := range rec.frames[s.ID] {
			if f != int64(i) {
				t.Fatalf("%s: result %d is frame %d", s.ID, i, f)
			}
		}
	}
	for i := range min(len(rec.dets["mp4"]), len(rec.dets["ts"])) {
		if rec.dets["mp4"][i] != rec.dets["ts"][i] {
			t.Fatalf("frame %d: mp4 detections\n%s differ from ts\n%s", i, rec.dets["mp4"][i], rec.dets["ts"][i])
		}
	}
	t.Logf("%d reloads during %d frames; at most %d versions alive at once", reloads, 2*shortFrames, maxVersions)
}

// TestBadReplacementKeepsServing: a reload of a damaged or incompatible file fails with a clear
// error in LastError while the loaded version keeps serving a running stream; a good file
// then reloads and clears the error.
func TestBadReplacementKeepsServing(t *testing.T) {
	path := copyModel(t, "yolox_nano_416")
	good, _ := os.ReadFile(path)
	other, err := os.ReadFile(filepath.Join(assets(t), "models", "fastestdet_352.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	a, rec, logs := startApp(t, config.Model{Path: path}, "",
		config.Stream{ID: "loop", Source: video(t, "car-detection.mp4"), Loop: true, Drop: config.DropBlock})
	e := a.Registry.Loaded("m")
	serving := e.Current()
	for i, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"garbage", bytes.Repeat([]byte("garbage\n"), 4096), "not a valid ONNX model"},
		{"truncated", good[:len(good)/3], "not a valid ONNX model"},
		{"empty", nil, "is empty"},
		{"other input size", other, "changes the input (416x416 yolox → 352x352 fastestdet)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replace(t, path, tc.data)
			err := e.Reload()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("reload: %v, want an error mentioning %q", err, tc.want)
			}
			if e.LastError() != err.Error() || e.Failures() != int64(i+1) {
				t.Errorf("LastError %q, failures %d", e.LastError(), e.Failures())
			}
			if e.Current() != serving || e.Loads() != 1 {
				t.Fatalf("the failed reload replaced the serving model (loads %d)", e.Loads())
			}
			n := rec.count("loop")
			testutil.Eventually(t, 20*time.Second, "no results after the failed reload", func() bool { return rec.count("loop") > n+5 })
			t.Logf("error: %s", e.LastError())
		})
	}
	replace(t, path, good)
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if e.LastError() != "" || e.Loads() != 2 || e.Current() == serving {
		t.Errorf("after a good reload: LastError %q, loads %d", e.LastError(), e.Loads())
	}
	for _, s := range stop(t, a, logs) {
		if dr := s.Stats.DroppedTotal() - s.Stats.Dropped[pipeline.DropShutdown].Load(); dr != 0 { // a stop cuts off the frame in hand
			t.Errorf("%d frames dropped", dr)
		}
	}
	if !strings.Contains(logs.String(), "reload failed, the loaded version keeps serving") {
		t.Error("failed reloads not logged")
	}
}

// optimizedCopy returns the bytes of ONNX Runtime's optimized graph of a bundled model: a
// different file with the same inputs and outputs.
func optimizedCopy(t *testing.T, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "optimized.onnx")
	s, err := infer.Open(infer.Config{Path: filepath.Join(assets(t), "models", name+".onnx"), OptimizedModelPath: out})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWatchReloadsChangedFile: Watch reloads a model whose file changed: written in place
// slowly, it is loaded once complete (not half-way); replaced by garbage, the reload fails
// once (not every poll) and the old version serves on; replaced by a good file, it reloads.
func TestWatchReloadsChangedFile(t *testing.T) {
	path := copyModel(t, "yolox_nano_416")
	orig, _ := os.ReadFile(path)
	newer := optimizedCopy(t, "yolox_nano_416")
	a, rec, logs := startApp(t, config.Model{Path: path}, "",
		config.Stream{ID: "loop", Source: video(t, "car-detection.mp4"), Loop: true, Drop: config.DropBlock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const interval = 200 * time.Millisecond
	a.Registry.Watch(ctx, interval)
	e := a.Registry.Loaded("m")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	// Rewrite the file in place in 20 pieces, 40 ms apart: the watcher sees it change at
	// several polls and must wait until it holds still.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		piece := newer[i*len(newer)/20 : (i+1)*len(newer)/20]
		if _, err := f.Write(piece); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	f.Close()
	testutil.Eventually(t, 10*time.Second, "the rewritten file was not reloaded", func() bool { return e.Loads() == 2 })
	if e.Failures() != 0 || e.Current().SHA256 != sum(newer) {
		t.Fatalf("failures %d (%s), serving sha256 %s, want %s", e.Failures(), e.LastError(), e.Current().SHA256, sum(newer))
	}

	replace(t, path, []byte("this is not a model"))
	testutil.Eventually(t, 10*time.Second, "the damaged file was not tried", func() bool { return e.Failures() == 1 })
	time.Sleep(5 * interval) // a negative check: the damaged file is not retried on every poll
	if e.Failures() != 1 || e.Loads() != 2 || !strings.Contains(e.LastError(), "not a valid ONNX model") {
		t.Fatalf("failures %d loads %d LastError %q: want one failure, the old model serving", e.Failures(), e.Loads(), e.LastError())
	}
	n := rec.count("loop")
	testutil.Eventually(t, 20*time.Second, "no results while the damaged file is there", func() bool { return rec.count("loop") > n+5 })

	replace(t, path, orig)
	testutil.Eventually(t, 10*time.Second, "the restored file was not reloaded", func() bool { return e.Loads() == 3 })
	if e.LastError() != "" || e.Current().SHA256 != sum(orig) {
		t.Fatalf("LastError %q, sha256 %s", e.LastError(), e.Current().SHA256)
	}
	for _, s := range stop(t, a, logs) {
		if dr := s.Stats.DroppedTotal() - s.Stats.Dropped[pipeline.DropShutdown].Load(); dr != 0 { // a stop cuts off the frame in hand
			t.Errorf("%d frames dropped", dr)
		}
	}
	t.Logf("log:\n%s", grepLines(logs.String(), "model m:"))
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// memSample is the process's memory at one point.
type memSample struct {
	rss, native, goHeap int64
	threads             string
}

// memory waits until only the current model version is alive (no retired one pinned by a
// batch), then samples RSS (after returning free C-heap pages to the kernel), the C-heap bytes
// in use, the Go heap in use and the thread count.
func memory(t testing.TB, r *model.Registry) memSample {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "a retired version stays pinned", func() bool { return r.Versions() == 1 })
	runtime.GC()
	memstat.Trim()
	rss, err := memstat.RSS()
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{rss: rss, native: memstat.NativeInUse(), goHeap: int64(ms.HeapInuse), threads: threads()}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func (m memSample) String() string {
	return fmt.Sprintf("RSS %6.1f MiB, C heap in use %5.1f MiB, Go heap in use %5.1f MiB, %s threads",
		mib(m.rss), mib(m.native), mib(m.goHeap), m.threads)
}

func threads() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Threads:") {
			return strings.TrimSpace(l[len("Threads:"):])
		}
	}
	return "?"
}

// TestReloadCyclesMemory: 20 reloads (full graph optimization each) while two looping streams
// run: the C heap in use (where a leaked session would show, several MiB each) and RSS stay
// within noise of before; every retired version is freed. BenchmarkReloadCycles runs 100.
func TestReloadCyclesMemory(t *testing.T) {
	r := reloadCycles(t, 20, 5)
	if r.after.native-r.before.native > 8<<20 || r.after.rss-r.before.rss > 64<<20 {
		t.Errorf("memory grew beyond 8 MiB of C heap or 64 MiB of RSS over %d reloads", r.cycles)
	}
}

// BenchmarkReloadCycles measures memory growth over 100 reloads under load (docs/benchmarks.md):
//
//	go test -run '^$' -bench ReloadCycles -benchtime 1x -v ./e2e/reload/
func BenchmarkReloadCycles(b *testing.B) {
	for range b.N {
		r := reloadCycles(b, 100, 10)
		b.ReportMetric(mib(r.after.rss-r.before.rss), "MiB-RSS-growth")
		b.ReportMetric(mib(r.after.native-r.before.native), "MiB-Cheap-growth")
		b.ReportMetric(float64(r.elapsed.Milliseconds())/float64(r.cycles), "ms/reload")
	}
}

type cyclesResult struct {
	cycles        int
	before, after memSample
	elapsed       time.Duration
}

// reloadCycles reloads model "m" warm + cycles times while two looping blocking streams run,
// sampling memory after the warm-up and at the end; it fails tb on a dropped frame or a
// version left alive.
func reloadCycles(tb testing.TB, cycles, warm int) cyclesResult {
	a, rec, logs := startApp(tb, yoloxDecl(tb), "",
		config.Stream{ID: "a", Source: video(tb, "car-detection.mp4"), Loop: true, Drop: config.DropBlock},
		config.Stream{ID: "b", Source: video(tb, "car-detection_remux.ts"), Loop: true, Drop: config.DropBlock})
	e := a.Registry.Loaded("m")
	for range warm { // let allocator arenas and the Go heap reach their working size
		if err := e.Reload(); err != nil {
			tb.Fatal(err)
		}
	}
	r := cyclesResult{cycles: cycles, before: memory(tb, a.Registry)}
	frames0 := rec.count("a") + rec.count("b")
	t0 := time.Now()
	maxVersions := int64(0)
	for i := range cycles {
		if err := e.Reload(); err != nil {
			tb.Fatal(err)
		}
		maxVersions = max(maxVersions, a.Registry.Versions())
		if (i+1)%25 == 0 {
			tb.Logf("after %3d reloads: %v", i+1, memory(tb, a.Registry))
		}
	}
	r.elapsed = time.Since(t0)
	r.after = memory(tb, a.Registry)
	frames := rec.count("a") + rec.count("b") - frames0
	streams := stop(tb, a, logs)
	tb.Logf("%d reloads in %v (%v each) while %d frames were inferred; at most %d versions alive",
		cycles, r.elapsed.Round(time.Millisecond), (r.elapsed / time.Duration(cycles)).Round(time.Millisecond), frames, maxVersions)
	tb.Logf("before: %v", r.before)
	tb.Logf("after:  %v", r.after)
	tb.Logf("growth: RSS %+.1f MiB, C heap in use %+.1f MiB", mib(r.after.rss-r.before.rss), mib(r.after.native-r.before.native))
	if frames == 0 {
		tb.Error("no frames inferred during the reloads: not under load")
	}
	for _, s := range streams {
		if dr := s.Stats.DroppedTotal() - s.Stats.Dropped[pipeline.DropShutdown].Load(); dr != 0 { // a stop cuts off the frame in hand
			tb.Errorf("%s: %d frames dropped", s.ID, dr)
		}
	}
	if e.Loads() != int64(1+warm+cycles) {
		tb.Errorf("loads %d", e.Loads())
	}
	return r
}
