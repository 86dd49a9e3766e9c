// Package defs holds what the running system shows its observers (metrics, the HTTP API, the
// command line): plain snapshots of streams, models and GPUs, and the small interfaces the app
// satisfies to hand them out. Observers depend on these, never on the app or the pipeline.
package defs

import (
	"context"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/source/live"
)

// Streams lists the running streams.
type Streams interface {
	// Streams returns a snapshot of every stream, in the order they were added.
	Streams() []StreamInfo
	// Stream returns one stream's snapshot.
	Stream(id string) (StreamInfo, bool)
}

// StreamControl adds and removes streams at run time.
type StreamControl interface {
	// AddStream validates s against the declared models and starts it. Errors say what to fix
	// and may quote s.Source (redact before showing them).
	AddStream(s config.Stream) error
	// AddRemoteStream is AddStream for a declaration from outside (the API): the files its
	// source names must lie in the allowed directories (sources.allow_paths).
	AddRemoteStream(s config.Stream) error
	// RemoveStream stops a stream and releases it.
	RemoveStream(id string) error
	// SetScene replaces a running stream's zones and lines (validated here); the next frame
	// uses them.
	SetScene(id string, c analytics.Config) error
}

// Models lists the declared models and reloads them.
type Models interface {
	// Models returns every declared model, sorted by name.
	Models() []ModelInfo
	// Model returns one declared model.
	Model(name string) (ModelInfo, bool)
	// ReloadModel loads a model's file again and swaps it in between batches (a model not
	// loaded yet is loaded); on error the previous version keeps serving.
	ReloadModel(name string) error
}

// GPUs lists the GPUs in use.
type GPUs interface {
	GPUs() []GPUInfo
}

// Frames hands out streams' latest decoded frames.
type Frames interface {
	// LatestFrame returns a stream's most recent frame with a reference the caller must
	// Release, or nil.
	LatestFrame(id string) *frame.Frame
}

// Results delivers encoded results or scene events to live subscribers.
type Results interface {
	// Subscribe returns JSON messages until cancel is called: one per inferred frame (a result),
	// or with Events one per scene event; a slow subscriber loses messages rather than slowing
	// the pipeline.
	Subscribe(s Subscription) (messages <-chan []byte, cancel func())
}

// Subscription selects what a live subscriber receives.
type Subscription struct {
	// Stream is a stream id; "": every stream.
	Stream string
	// Events subscribes to scene events (docs/events.schema.json) instead of results.
	Events bool
	// Types keeps only these event types; empty: all.
	Types []string
}

// Waiter reports when every finite stream has ended.
type Waiter interface {
	Wait(ctx context.Context) error
}

// StreamState is a stream's life stage.
type StreamState string

// Stream states.
const (
	StateStarting StreamState = "starting" // no access unit read yet
	StateRunning  StreamState = "running"
	StateDegraded StreamState = "degraded" // running, but inference drops too many frames
	StateEnded    StreamState = "ended"    // a file finished
	StateStopped  StreamState = "stopped"  // stopped (vinfer stopping) before its source's end
	StateFailed   StreamState = "failed"   // stopped by an error, or its source cannot be opened
)

// StreamStates lists every state, in life order.
func StreamStates() []StreamState {
	return []StreamState{StateStarting, StateRunning, StateDegraded, StateEnded, StateStopped, StateFailed}
}

// Retry is the schedule of a stream whose source could not be opened: it is tried again with
// backoff until it opens or is removed.
type Retry struct {
	// Attempts counts the failed attempts so far.
	Attempts int
	// Next is when the next attempt starts (zero once stopped: the app is stopping).
	Next time.Time
	// Initial and Max are the backoff: Initial after the first failure, doubling up to Max.
	Initial, Max time.Duration
}

// Overload is a running stream's inference drops over the degraded window.
type Overload struct {
	// Degraded is true while the share of dropped frames is over the threshold.
	Degraded bool
	// Ratio is the share of decoded frames dropped (queue_full) over the last Window.
	Ratio  float64
	Window time.Duration
	// Changes counts the times the stream went degraded; DegradedFor sums the time it was.
	Changes     int
	DegradedFor time.Duration
}

// StreamInfo is a snapshot of one stream.
type StreamInfo struct {
	// Decl is the stream as declared (its Source unredacted: redact before showing it).
	Decl config.Stream
	Live bool
	// Err is why a failed stream stopped.
	Err error
	// Started is when the stream was added; Elapsed how long it ran (until now, or its end).
	Started time.Time
	Elapsed time.Duration
	Ended   bool
	// Stopped: it ended because vinfer stopped it (SIGINT), not at its source's end.
	Stopped bool
	// Queue is the number of frames waiting for inference.
	Queue    int
	Counters StreamCounters
	// Classes counts detections per label.
	Classes map[string]int64
	// Pool is the decoder's frame pool, nil before the first frame or without one.
	Pool *frame.Stats
	// Source are a live source's counters (packets, loss, reconnects); nil for files.
	Source *live.Stats
	// Device is the GPU ordinal of an nvdec stream, -1 otherwise.
	Device int
	// Scene are the zone and line figures (occupancy, crossings, events); nil with tracker: none.
	Scene *analytics.Metrics
	// Retry is set for a stream whose source could not be opened (Err says why).
	Retry *Retry
	// Overload is the drop share of a stream that runs; nil before the first window.
	Overload *Overload
	// Activity is the stream's activity gate (docs/activity.md); nil when gating is off.
	Activity *Activity
}

// State derives the stream's life stage.
func (s *StreamInfo) State() StreamState {
	switch {
	case s.Err != nil:
		return StateFailed
	case s.Ended && s.Stopped:
		return StateStopped
	case s.Ended:
		return StateEnded
	case s.Counters.AccessUnits == 0:
		return StateStarting
	case s.Overload != nil && s.Overload.Degraded:
		return StateDegraded
	}
	return StateRunning
}

// StreamCounters are a stream's counters since it was added.
type StreamCounters struct {
	AccessUnits, Decoded, Inferred, Detections int64
	// LatencyNanos sums the decoder-to-result latency of inferred frames.
	LatencyNanos int64
	Dropped      [NumDropReasons]int64
	// Masked, Filtered and Merged count the detections the stream's object rules removed: in a
	// mask, rejected by a filter, suppressed inside a class group (package objects).
	Masked, Filtered, Merged int64
}

// DroppedTotal sums drops over every reason.
func (c *StreamCounters) DroppedTotal() int64 {
	var n int64
	for _, v := range c.Dropped {
		n += v
	}
	return n
}

// NotAnalysed counts the decoded frames that reached no result for another reason than being
// skipped on purpose (interval, max_fps): inference behind, decode and inference errors,
// shutdown.
func (c *StreamCounters) NotAnalysed() int64 {
	var n int64
	for r, v := range c.Dropped {
		if !DropReason(r).Shed() {
			n += v
		}
	}
	return n
}

// MeanLatency is the mean decoder-to-result latency of inferred frames.
func (c *StreamCounters) MeanLatency() time.Duration {
	if c.Inferred == 0 {
		return 0
	}
	return time.Duration(c.LatencyNanos / c.Inferred)
}

// ModelInfo is a snapshot of one declared model.
type ModelInfo struct {
	Decl config.Model
	// Loaded is false until a stream uses the model or it is preloaded.
	Loaded bool
	// Family, Input size, MaxBatch and Labels describe the serving version.
	Family         string
	InputW, InputH int
	MaxBatch       int
	// Batch describes the batch dimension: "1", "dynamic" or "dynamic (rewritten from 1)".
	Batch                string
	Labels               []string
	LoadTime             time.Duration
	Loads                int64
	LastError            string
	Batches, BatchFrames int64

	// Precision is what the serving version computes in: "fp32", or "fp16 …" with the load
	// check's figures (model.Model.Precision).
	Precision string
}

// GPUInfo is one GPU in use.
type GPUInfo struct {
	Ordinal int
	Name    string
	// MemUsed and MemTotal are the device's memory in bytes (all processes).
	MemUsed, MemTotal uint64
}
