package defs

// DropReason says why a decoded frame did not reach a result.
type DropReason uint8

// Drop reasons, each counted per stream.
const (
	DropQueueFull   DropReason = iota // inference behind a live stream: oldest queued frame dropped
	DropInterval                      // skipped by the stream's inference interval (every Nth frame)
	DropFPSCap                        // over the stream's max_fps
	DropDecodeError                   // the access unit could not be decoded
	DropInferError                    // the inference run failed
	DropShutdown                      // decoded while the stream was stopping
	NumDropReasons
)

var dropReasonNames = [NumDropReasons]string{"queue_full", "interval", "fps_cap", "decode_error", "infer_error", "shutdown"}

func (r DropReason) String() string { return dropReasonNames[r] }

// DropReasons lists every reason, in order.
func DropReasons() []DropReason {
	out := make([]DropReason, NumDropReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// Shed reports a frame skipped on purpose (interval, fps cap) rather than lost.
func (r DropReason) Shed() bool { return r == DropInterval || r == DropFPSCap }
