package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/ffmpeg"
	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/internal/redact"
	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/model"
)

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML configuration (default: the bundled sample)")
	httpAddr := fs.String("http", "", `serve the HTTP API, /metrics and the web page on this address and keep running until SIGINT (default: 127.0.0.1:8080 while the job runs; "none" disables it; set output.token before binding beyond loopback)`)
	jsonl := fs.String("jsonl", "", `where detection events go: "-" stdout (default), a file, or "none"`)
	all := fs.Bool("all-frames", false, "emit a JSON line for every inferred frame, not only frames with detections")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "log as JSON instead of text")
	nodeName := fs.String("node-name", "", "cluster mode: this node's name, unique in the cluster (default: cluster.node, else the host name)")
	advertise := fs.String("cluster-advertise", "", "cluster mode: the base URL other nodes forward API calls to (default: cluster.advertise, else http://HOST:PORT of --http)")
	stopDrain := fs.Duration("stop-drain", 3*time.Second, "on SIGINT/SIGTERM, how long the frames already decoded may take to be inferred; the rest are dropped, counted as shutdown (0: no bound)")
	shardFlag := fs.String("shard", "", "static sharding: run only the configuration's streams of shard i of N (i/N, or auto/N with i the ordinal ending the host name, as in a StatefulSet)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("run: unexpected argument %q (give a configuration with --config FILE)", fs.Arg(0))
	}
	log, err := newLogger(*logLevel, *logJSON)
	if err != nil {
		return err
	}
	sigCtx, sigDone := context.WithCancel(context.Background())
	defer sigDone()
	keepSignalStack(sigCtx, log)
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	} else if cfg, err = defaultConfig(); err != nil {
		return err
	}
	if *httpAddr != "" {
		cfg.Output.HTTP = *httpAddr
	}
	if *jsonl != "" {
		cfg.Output.JSONL = *jsonl
	}
	if *shardFlag != "" {
		if cfg.Cluster != nil {
			return errors.New("--shard and a cluster: section exclude each other (the cluster spreads the streams itself)")
		}
		host, _ := os.Hostname()
		sh, err := parseShard(*shardFlag, host)
		if err != nil {
			return err
		}
		all := len(cfg.Streams)
		cfg.Streams = sh.filter(cfg.Streams)
		log.Info(fmt.Sprintf("shard %d/%d: %d of the configuration's %d streams", sh.i, sh.n, len(cfg.Streams), all))
	}
	if t := os.Getenv(tokenEnv); t != "" && cfg.Output.Token == "" {
		if err := config.CheckSecret(tokenEnv, t); err != nil {
			return err
		}
		cfg.Output.Token = t // from a Secret (container, Helm chart), never written in a file
	}

	// The API serves on 127.0.0.1:8080 by default while the job runs; an address given by flag or
	// config keeps the process serving after file streams end.
	serve := cfg.Output.HTTP != "" && cfg.Output.HTTP != "none"
	if cfg.Cluster != nil && !serve {
		return errors.New("cluster mode needs the API (other nodes forward to it): set output.http or --http ADDR")
	}
	httpOn := cfg.Output.HTTP != "none"
	if serve { // a taken address fails the run before anything starts (streams, recordings)
		ln, err := net.Listen("tcp", cfg.Output.HTTP)
		if err != nil {
			return fmt.Errorf("api: listen on %s: %w (choose another address with --http, e.g. 127.0.0.1:8081)", cfg.Output.HTTP, err)
		}
		ln.Close()
	}
	if cfg.Output.HTTP == "" || cfg.Output.HTTP == "none" {
		cfg.Output.HTTP = defaultHTTP
	}

	// The JSON Lines output: output.jsonl (default stdout) or --jsonl, every frame with
	// --all-frames, else frames with detections.
	if out := cfg.Output.JSONL; out != "none" {
		if out == "" {
			out = "-"
		}
		cfg.Output.Sinks = append([]config.Sink{config.NewSink("jsonl", map[string]any{"path": out, "all_frames": *all})}, cfg.Output.Sinks...)
	}
	cfg.Output.JSONL = "none"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mx := metrics.New() // Prometheus metrics, fed as the pipeline's observer
	a, err := app.New(context.Background(), cfg, app.Options{Log: log, KeepLatest: httpOn, Observer: mx, WatchModels: true})
	if err != nil {
		return err
	}
	if err := a.Registry.Preload(false); err != nil {
		a.Stop()
		return err
	}
	var node *cluster.Node
	if cfg.Cluster != nil {
		if err := clusterDefaults(cfg.Cluster, *nodeName, *advertise, cfg.Output.HTTP); err != nil {
			a.Stop()
			return err
		}
		node, err = a.JoinCluster(ctx, *cfg.Cluster)
		switch {
		case err == nil:
			defer node.Close() // before a.Stop (deferred later, below): streams handed over first
		case errors.Is(err, cluster.ErrUnavailable) && cfg.Cluster.OnNATSUnavailable == "standalone":
			log.Warn("cluster: NATS unavailable: running standalone with the configuration's streams (cluster.on_nats_unavailable: standalone)", "err", err)
		default:
			a.Stop()
			return err
		}
	}
	var errs []error
	var notAdded []defs.StreamInfo // in the summary with their reason
	for _, s := range cfg.Streams {
		if node != nil {
			break // the configuration's streams are in the cluster's registry
		}
		if err := a.StartStream(s); err != nil { // listed as failed, and retried
			errs = append(errs, err)
			if _, listed := a.Stream(s.ID); !listed {
				notAdded = append(notAdded, defs.StreamInfo{Decl: s, Err: errors.New(redactAll(err.Error(), cfg.Streams)), Device: -1})
			}
		}
	}
	if node == nil && len(cfg.Streams) == 0 && !serve {
		a.Stop()
		return errors.New("the configuration has no streams: add some under streams:, or pass --http ADDR to add them through the API")
	}
	if len(errs) == len(cfg.Streams) && len(errs) > 0 && !serve && !hasLive(a) { // a live one is retried
		a.Stop() // nothing else can make progress: no retry is promised
		for i, err := range errs {
			if re := (*app.RetryError)(nil); errors.As(err, &re) {
				errs[i] = fmt.Errorf("%w (given up: with no API and no live source nothing else can run; pass --http ADDR to keep trying)", re.Err)
			}
		}
		return errors.Join(errs...)
	}
	for _, err := range errs {
		log.Error(redactAll(err.Error(), cfg.Streams))
	}
	gpus := a.Devices.Opened()
	var gpuBefore cuda.Stats // after the GPU models' load and warm-up
	if len(gpus) > 0 {
		gpuBefore = cuda.ReadStats()
		for _, d := range gpus {
			log.Info("GPU path: NVDEC → fused preprocessing → ONNX Runtime CUDA on " + d.String())
		}
	}
	if httpOn {
		srv, err := startAPI(ctx, a, mx, cfg.Output, log, node)
		switch {
		case err != nil && serve:
			a.Stop()
			return err
		case err != nil:
			log.Warn(fmt.Sprintf("web view and API not started (%v); pass --http ADDR for another address", err))
		default:
			defer srv.Close()
		}
	}

	start := time.Now()
	progressDone := make(chan struct{})
	progressStopped := make(chan struct{})
	go func() {
		defer close(progressStopped)
		tty := isTerminal(os.Stderr)
		every := 10 * time.Second // a log file gets a line every 10 s, a terminal a live line
		if tty {
			every = time.Second
		}
		(&progress{P: a, W: os.Stderr, Terminal: tty, Interval: every}).Run(progressDone)
	}()
	if node != nil {
		select { // serve until SIGINT/SIGTERM, or until the cluster refuses this node
		case <-ctx.Done():
		case <-node.Done():
			err := node.Err()
			log.Error("cluster: left the cluster", "err", err)
			errs = append(errs, err)
		}
	} else if serve || hasLive(a) {
		<-ctx.Done() // serve until SIGINT/SIGTERM
	} else {
		a.Wait(ctx)
	}
	if ctx.Err() != nil {
		defer forceOnSignal(log)()
		log.Info("stopping: draining in-flight frames (a second SIGINT or SIGTERM a second later ends at once)")
	}
	if node != nil {
		node.Close() // hand this node's streams over before stopping them
	}
	var gpuMem []string // device memory in use at the end, before anything is freed
	for _, d := range gpus {
		if free, total, err := d.MemInfo(); err == nil {
			gpuMem = append(gpuMem, fmt.Sprintf("cuda:%d %d MiB", d.Ordinal(), (total-free)>>20))
		}
	}
	pools := a.DecoderPools() // the shared decoders alive before the stop closes them
	drain := time.Duration(0) // a job that ended by itself drained everything already
	if ctx.Err() != nil {
		drain = *stopDrain
	}
	err = a.StopWithin(drain)
	streams := append(notAdded, a.Streams()...) // after Stop: the frames in flight were drained
	close(progressDone)
	<-progressStopped
	var gone []cluster.Departed // streams handed over are no longer the app's
	if node != nil {
		gone = node.Departed()
	}
	summary(os.Stderr, streams, time.Since(start), gone...)
	idleSummary(os.Stderr, streams, pools)
	if len(gpus) > 0 {
		gpuSummary(os.Stderr, streams, cuda.ReadStats().Sub(gpuBefore), gpuMem)
	}
	if err == nil {
		err = failed(streams)
	}
	if err == nil && node != nil && node.Err() != nil {
		err = node.Err()
	}
	return err
}

// errStreamsFailed makes `vinfer run` exit non-zero when a stream failed.
var errStreamsFailed = errors.New("streams failed")

// failed returns an error naming the streams that failed (not added, or stopped by an error).
func failed(streams []defs.StreamInfo) error {
	var ids []string
	for _, s := range streams {
		if s.Err != nil {
			ids = append(ids, s.Decl.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %w: %s", len(ids), len(streams), errStreamsFailed, strings.Join(ids, ", "))
}

// gpuSummary prints the GPU path's traffic since the streams started: every host↔device copy
// and device allocation vinfer made, per frame inferred from nvdec streams.
func gpuSummary(w io.Writer, streams []defs.StreamInfo, st cuda.Stats, mem []string) {
	var frames int64
	for _, s := range streams {
		if s.Device >= 0 {
			frames += s.Counters.Inferred
		}
	}
	per := func(n uint64) float64 { return float64(n) / float64(max(frames, 1)) }
	fmt.Fprintf(w, "  gpu: %d frames inferred from nvdec streams; host→device copies %d (%.3f per frame), device→host %d (%.3f per frame, %.0f bytes per frame); device allocations %d, kernel launches %d, context rebinds %d\n",
		frames, st.HtoD, per(st.HtoD), st.DtoH, per(st.DtoH), per(st.DtoHBytes), st.DeviceAllocs+st.PoolAllocs, st.Launches, st.Rebinds)
	if len(mem) > 0 {
		fmt.Fprintf(w, "  gpu memory in use at the end (whole device): %s\n", strings.Join(mem, ", "))
	}
}

// tokenEnv gives the API's bearer token when the configuration has no output.token.
const tokenEnv = "VINFER_API_TOKEN"

// defaultHTTP is where the API listens unless told otherwise.
const defaultHTTP = "127.0.0.1:8080"

func hasLive(a *app.App) bool {
	for _, s := range a.Streams() {
		if s.Live {
			return true
		}
	}
	return false
}

// defaultConfig runs the bundled sample: one-by-one-person-detection.mp4 with YOLOX-Nano.
func defaultConfig() (*config.Config, error) {
	dir := model.FindAssets()
	if dir == "" {
		return nil, errors.New("the bundled sample is not set up: run scripts/setup.sh (or pass --config)")
	}
	m, err := model.Declare(filepath.Join(dir, "models", "yolox_nano_416.onnx"))
	if err != nil {
		return nil, err
	}
	m.Name = "yolox_nano"
	return &config.Config{
		Models: []config.Model{m},
		Streams: []config.Stream{{ID: "sample", Source: filepath.Join(dir, "videos", "one-by-one-person-detection.mp4"), Model: "yolox_nano",
			Config: sampleScene}},
	}, nil
}

func newLogger(level string, asJSON bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, o)
	if asJSON {
		h = slog.NewJSONHandler(os.Stderr, o)
	}
	lg := slog.New(h)
	slog.SetDefault(lg)
	quietFFmpeg(l <= slog.LevelDebug)
	return lg, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func versionCmd() error {
	fmt.Println("vinfer", version, runtime.Version())
	fmt.Println("FFmpeg libavcodec", ffmpeg.Version())
	if err := ort.Load(""); err != nil {
		fmt.Println("ONNX Runtime: not found:", err)
		return nil
	}
	fmt.Println("ONNX Runtime", ort.Version(), "from", ort.Loaded())
	return nil
}

var version = "dev"

// redactAll removes the credentials of every stream's source from a message.
func redactAll(msg string, streams []config.Stream) string {
	for _, s := range streams {
		msg = redact.Message(msg, s.Source)
	}
	return msg
}

// sampleScene is where something happens in the bundled clip (768×432): people walk in from the
// bottom left, stop at the table and leave to the right.
var sampleScene = analytics.Config{
	Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}},
		Classes: []string{"person"}, Inertia: 3, Loiter: analytics.Duration(5 * time.Second)}},
	Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}},
}
