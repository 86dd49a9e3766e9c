package codec

import (
	"context"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/ffmpeg"
	"github.com/vinfer/vinfer/media"
)

// KeyProbe is what a ProbeKey did: an idle stream's key frame decoded alone on a decoder that
// several streams share (package decpool).
type KeyProbe struct {
	// Frames is the number of pictures emitted (1 normally).
	Frames int
	// Send is the time to send the key frame and receive what came out at once; Push that to
	// push its picture out with an H.264 end of sequence (Pushed); Drain that of the fallback,
	// an end-of-stream drain and reset (Drained).
	Send, Push, Drain time.Duration
	Pushed, Drained   bool
	// Setups counts the decoder set-ups during the probe (Setups of the decoder: with NVDEC a
	// CUVID decoder and its surfaces made anew).
	Setups int64
}

// keyDecoder is what probeKey needs of a decoder (Decoder, NVDEC).
type keyDecoder interface {
	Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error
	Flush(ctx context.Context, emit func(*frame.Frame) error) error
	Setups() int64
	// pushEOS sends EndOfSequenceH264 and emits what comes out.
	pushEOS(ctx context.Context, emit func(*frame.Frame) error) error
	// resetOutput sends ResetOutputH264 (its refusal expected).
	resetOutput()
	// keyState is the decoder's state between probes.
	keyState() *keyState
}

// keyState is what a decoder remembers of its probes.
type keyState struct {
	// held: the last probe left its key frame in the decoder as a reference (no reset), and
	// the decoder awaits a key frame (synced is false).
	held bool
}

// resetFor reports whether a decoder whose last probe left its state must be reset before
// au: unless au is an H.264 IDR, which drops every reference itself, the pictures of another
// stream would be referenced.
func (k *keyState) resetFor(c media.Codec, au *media.AccessUnit) bool {
	if !k.held {
		return false
	}
	k.held = false
	return c != media.CodecH264 || !ffmpeg.HasIDR(au.Data)
}

// probeKey decodes the key frame au alone on d and emits its picture without ending the
// stream when it can: the picture comes out on its own (no reordering delay), or for an H.264
// IDR an end of sequence pushes it out; the decoder keeps its set-up, forgets the order of
// what it output (ResetOutputH264: the next stream's IDR may have a lower POC), and the IDR
// of the next probe drops this one's reference. Otherwise (H.265, an H.264 key frame without IDR, nothing
// out) it drains to the end of stream and resets, as Flush does; an H.264 reset frees the
// decoder's set-up, rebuilt by the next picture (KeyProbe.Setups; with NVDEC ~10-100 ms and
// device allocations). After ProbeKey the decoder takes key frames only.
func probeKey(d keyDecoder, c media.Codec, ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) (KeyProbe, error) {
	var p KeyProbe
	s0 := d.Setups()
	count := func(f *frame.Frame) error {
		p.Frames++
		return emit(f)
	}
	push := c == media.CodecH264 && au.Key && ffmpeg.HasIDR(au.Data)
	t := time.Now()
	err := d.Decode(ctx, au, count)
	p.Send = time.Since(t)
	if err == nil && push && p.Frames == 0 {
		t = time.Now()
		err = d.pushEOS(ctx, count)
		p.Push, p.Pushed = time.Since(t), true
	}
	if err != nil || !push || p.Frames == 0 {
		t = time.Now()
		if ferr := d.Flush(ctx, count); err == nil {
			err = ferr
		}
		p.Drain, p.Drained = time.Since(t), true
	} else {
		d.resetOutput() // a picture output at once set FFmpeg's output order by its POC
		d.keyState().held = true
	}
	p.Setups = d.Setups() - s0
	return p, err
}

// pusher is a keyDecoder that can push pictures out with an end of sequence (one decoding
// thread: with frame threads pictures may still be in flight).
type pusher interface {
	keyDecoder
	canPush() bool
}

// maxHeld bounds the pictures an H.264 decoder holds for reordering (the DPB's 16 and one).
const maxHeld = 17

// park emits the pictures d still holds, as Flush does, but keeps d set up where it can: an
// H.264 decoder gets them out with end-of-sequence NAL units, one picture each, instead of an
// end of stream, whose reset frees FFmpeg's H.264 set-up, then forgets the order of the
// pictures it output (ResetOutputH264). d then takes key frames only, and the next one,
// unless an IDR, resets it first. Otherwise (H.265, frame threads, a push refused) it is
// Flush.
func park(d pusher, c media.Codec, ctx context.Context, emit func(*frame.Frame) error) error {
	if c != media.CodecH264 || !d.canPush() {
		return d.Flush(ctx, emit)
	}
	for range maxHeld {
		n := 0
		err := d.pushEOS(ctx, func(f *frame.Frame) error {
			n++
			return emit(f)
		})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return d.Flush(ctx, emit) // e.g. a lone field pending: the end of sequence is refused
		}
		if n == 0 {
			d.resetOutput()
			d.keyState().held = true
			return nil
		}
	}
	return d.Flush(ctx, emit)
}
