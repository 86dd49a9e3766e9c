package codec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// NVDECStream decodes one stream's H.264 or H.265 access units with NVDEC (NVDEC) on Device,
// for the pipeline (it implements pipeline.VideoDecoder). Frames stay in device memory (NV12);
// each emitted frame carries a ready event (frame.Frame.Ready, a *cuda.Event) recorded on the
// decoder's own CUDA stream after FFmpeg queued the picture's mapping there, so that the
// model's GPU lane orders its preprocessing after it without a host wait.
//
// The goroutine that calls Decode first is locked to its OS thread with the device's context
// current for the decoder's life (NVDEC's rule: its stream's work is queued from one bound
// thread); Decode, Flush and Close must all be called from that goroutine, as the pipeline's
// stream loop does. Nothing is allocated per frame: one event per pool frame, created the
// first time that frame is emitted.
type NVDECStream struct {
	// Device to decode on; required.
	Device *cuda.Device
	// Codec of the access units: media.CodecH264 or media.CodecH265.
	Codec media.Codec
	// Frames is how many decoded frames the pipeline may hold at once (≤ 16); 0: DefaultNVDECFrames.
	Frames int
	// ReorderPTS re-stamps the frames in presentation order (Decoder.ReorderPTS).
	ReorderPTS bool
	// Shared is for a decoder that changes goroutines (decpool.Pool's: an idle stream's key
	// frames on a shared decoder, a warm decoder handed to a waking stream): each Decode,
	// Flush and Close binds the calling goroutine to its thread with the context current for
	// its own duration, instead of once for the decoder's life. Calls must still not overlap.
	Shared bool

	nv     NVDEC
	stream *cuda.Stream
	events map[*frame.Frame]*cuda.Event
	emit   func(*frame.Frame) error // the caller's, for the current Decode or Flush
	mark   func(*frame.Frame) error // d.record, bound once
	bound  bool                     // this goroutine is locked with the context current
}

// Init creates the decoder's CUDA stream and opens NVDEC. Errors wrap
// ErrNVDECUnavailable when FFmpeg or the driver cannot decode with NVDEC.
func (d *NVDECStream) Init() error {
	if d.Device == nil {
		return errors.New("codec: Decoder needs a Device")
	}
	if d.Frames == 0 {
		d.Frames = DefaultNVDECFrames
	}
	var err error
	if d.stream, err = d.Device.NewStream(); err != nil {
		return err
	}
	d.nv = NVDEC{Device: d.Device, Stream: d.stream, Codec: d.Codec, Frames: d.Frames, ReorderPTS: d.ReorderPTS}
	if err := d.nv.Init(); err != nil {
		d.stream.Destroy()
		d.stream = nil
		return err
	}
	d.events = make(map[*frame.Frame]*cuda.Event, d.Frames)
	d.mark = d.record
	return nil
}

// Pool returns the decoder's frame pool (for the pipeline's accounting).
func (d *NVDECStream) Pool() *frame.Pool { return d.nv.Pool() }

// Decode decodes one access unit and calls emit for every frame that comes out, in
// presentation order, with NVDEC.Decode's contract (emit owns a reference; waits for a
// free frame when the pipeline holds all of them; access units before the first key frame are
// skipped with a DecodeError).
func (d *NVDECStream) Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	release, err := d.enter(emit)
	if err != nil {
		return err
	}
	defer release()
	return d.nv.Decode(ctx, au, d.mark)
}

// enter makes the CUDA context current for a call (the shared device's, bound to this thread
// until release; or the stream's own) and sets where its pictures go.
func (d *NVDECStream) enter(emit func(*frame.Frame) error) (release func(), err error) {
	if d.Shared {
		if err := d.Device.Bind(); err != nil {
			return nil, err
		}
		d.emit = emit
		return d.Device.Unbind, nil
	}
	if err := d.bind(); err != nil {
		return nil, err
	}
	d.emit = emit
	return func() {}, nil
}

// Flush emits the frames NVDEC still holds at the end of the stream.
func (d *NVDECStream) Flush(ctx context.Context, emit func(*frame.Frame) error) error {
	release, err := d.enter(emit)
	if err != nil {
		return err
	}
	defer release()
	return d.nv.Flush(ctx, d.mark)
}

// ProbeKey decodes the key frame au alone and emits its picture (NVDEC.ProbeKey), for
// decpool's shared key-frame decoders.
func (d *NVDECStream) ProbeKey(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) (KeyProbe, error) {
	release, err := d.enter(emit)
	if err != nil {
		return KeyProbe{}, err
	}
	defer release()
	return d.nv.ProbeKey(ctx, au, d.mark)
}

// Park emits the frames NVDEC still holds and keeps it set up where it can (NVDEC.Park), for
// a stream going idle that gives its decoder back to decpool.
func (d *NVDECStream) Park(ctx context.Context, emit func(*frame.Frame) error) error {
	release, err := d.enter(emit)
	if err != nil {
		return err
	}
	defer release()
	return d.nv.Park(ctx, d.mark)
}

// Setups returns how many times the hwaccel was set up (NVDEC.Setups).
func (d *NVDECStream) Setups() int64 { return d.nv.Setups() }

func (d *NVDECStream) bind() error {
	if d.bound {
		return nil
	}
	if d.stream == nil {
		return errors.New("codec: Decoder used before Init or after Close")
	}
	if err := d.Device.Bind(); err != nil {
		return err
	}
	d.bound = true
	return nil
}

// record marks f ready on the decoder's stream and passes it on.
func (d *NVDECStream) record(f *frame.Frame) error {
	ev := d.events[f]
	if ev == nil {
		var err error
		if ev, err = d.Device.NewEvent(false); err != nil {
			f.Release()
			return fmt.Errorf("codec: frame ready event: %w", err)
		}
		d.events[f] = ev
	}
	if err := ev.Record(d.stream); err != nil {
		f.Release()
		return err
	}
	f.Ready = ev
	return d.emit(f)
}

// closeWait bounds how long Close waits for frames still held elsewhere (a snapshot) before
// it frees their events.
const closeWait = 2 * time.Second

// Close waits (up to 2 s) for the frames the pipeline still holds, closes NVDEC and frees the
// events and the CUDA stream, then unlocks the goroutine from its thread.
func (d *NVDECStream) Close() error {
	if d.stream == nil {
		return nil
	}
	if d.Shared {
		if err := d.Device.Bind(); err != nil {
			return err
		}
		defer d.Device.Unbind()
	}
	if p := d.nv.Pool(); p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		p.WaitIdle(ctx)
		cancel()
	}
	errs := []error{d.nv.Close()}
	for _, ev := range d.events {
		errs = append(errs, ev.Destroy())
	}
	d.events = nil
	errs = append(errs, d.stream.Destroy())
	d.stream = nil
	if d.bound {
		d.bound = false
		d.Device.Unbind()
	}
	return errors.Join(errs...)
}
