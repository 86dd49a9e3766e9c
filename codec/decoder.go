// Package codec decodes access units into frames: Decoder (FFmpeg's libavcodec through go-astiav,
// on the CPU) and NVDEC (NVIDIA's hardware decoder through FFmpeg's cuda hwaccel). Every stream
// has its own decoder instance; there is no global lock. Decoded pictures are not copied: a
// frame.Frame's planes point into the AVFrame held by its pool slot until the frame's last
// Release.
package codec

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/ffmpeg"
	"github.com/vinfer/vinfer/media"
)

// DefaultFrames is the frame pool size of a Decoder whose Frames is 0.
const DefaultFrames = 8

// nanos is the packet time base given to FFmpeg: timestamps are time.Duration values.
var nanos = astiav.NewRational(1, int(time.Second))

// Decoder decodes the H.264 or H.265 Annex-B access units of one stream with FFmpeg's software
// decoders. B-frames are reordered: frames come out in presentation order with the PTS of
// their access unit (or re-stamped: ReorderPTS). A Decoder is used by one goroutine at a time; frames may be released from
// any goroutine.
//
// Output formats: yuv420p and yuvj420p pictures become frame.FormatI420 (FullRange for yuvj or
// a full-range stream) and nv12 becomes frame.FormatNV12, both without copying. Other formats
// (10-bit, 4:2:2, 4:4:4) are converted with swscale to 8-bit I420 into the pool frame's own
// buffer (one copy).
//
// Backpressure: frames come from a pool of Frames slots. When the consumer holds all of them,
// Decode waits in Get until one is released or ctx ends; the waiting picture is dropped then.
// The pool is replaced when the picture size or format changes mid-stream; frames of the old
// pool stay valid until released.
type Decoder struct {
	// Codec of the access units: media.CodecH264 or media.CodecH265.
	Codec media.Codec
	// Threads is the number of decoding threads (FFmpeg frame and slice threading; frame
	// threading delays output by one frame per extra thread). 0 means 1, since a server decodes
	// many streams in parallel already; a negative value lets FFmpeg use one per CPU.
	Threads int
	// Frames is the most decoded frames the consumer may hold at once (the pool's size);
	// 0 means DefaultFrames.
	Frames int
	// Name labels the frame pool in accounting and leak reports; "" means "ffmpeg-<codec>".
	Name string
	// OutputCorrupt emits pictures FFmpeg reports as damaged (AVFrame.decode_error_flags, e.g.
	// concealed macroblocks, or AV_FRAME_FLAG_CORRUPT). By default they are dropped and Decode
	// reports them as ErrCorrupt, so a detector does not see smeared macroblocks. Pictures that
	// merely reference a damaged one are emitted: FFmpeg does not track the damage across
	// frames, and the next key frame ends it.
	OutputCorrupt bool
	// ReorderPTS re-stamps the frames for a source whose PTS count access units in decoding
	// order (media.StreamInfo.PTSInDecodeOrder: raw Annex-B files): each frame gets the
	// smallest PTS of the access units fed and not yet shown, so frames come out one frame
	// duration apart in presentation order. Exact for a constant-rate count. A picture dropped
	// (ErrCorrupt, ctx) takes its stamp along; a rejected access unit leaves no stamp, so the
	// pictures shown between its own place and its place in decoding order (at most the
	// reorder depth) are stamped one frame off; a picture
	// FFmpeg loses silently shifts the stamps by one frame until the next key frame
	// (Stats.StalePTS).
	ReorderPTS bool
	// SkipNonRef decodes reference pictures only (FFmpeg skip_frame = AVDISCARD_NONREF): the
	// others (most B-frames) are never decoded nor emitted, saving their decoding where they
	// would not be inferred anyway (interval, max_fps). Not with ReorderPTS (Init fails).
	SkipNonRef bool

	cc      *astiav.CodecContext
	pkt     *astiav.Packet
	scratch *astiav.Frame // receives pictures before they move into a pool frame
	info    ffmpeg.FrameInfo
	sws     *astiav.SoftwareScaleContext
	swsKey  poolKey

	pool    *frame.Pool
	poolKey poolKey
	retired []*frame.Pool // pools replaced after a size change, closed again by Close

	setups *ffmpeg.Setups
	key    keyState // ProbeKey's (keyprobe.go)
	synced bool     // a key frame was sent since Init or Flush
	index  int64    // next Frame.Index
	stats  Stats
	clocks wallclocks
	order  ptsOrder // ReorderPTS: stamps of the access units fed and not yet shown
	shown  int64    // ReorderPTS: the presentation PTS of the picture in d.info
}

// poolKey is what the frames of one pool have in common.
type poolKey struct {
	width, height int
	format        astiav.PixelFormat
}

// Stats counts what a Decoder did.
type Stats struct {
	// AccessUnits sent to FFmpeg and Frames emitted.
	AccessUnits, Frames int64
	// Skipped counts access units dropped before the first key frame.
	Skipped int64
	// Rejected counts access units or pictures FFmpeg failed to decode.
	Rejected int64
	// Concealed counts pictures with concealed errors that were dropped (see OutputCorrupt).
	Concealed int64
	// Dropped counts pictures dropped because ctx ended while Decode waited for a free frame.
	Dropped int64
	// Converted counts pictures converted by swscale.
	Converted int64
	// Pools counts frame pools created (more than one after size changes).
	Pools int
	// StalePTS counts access-unit stamps ReorderPTS dropped because their picture never came
	// out (resynchronised at a key frame, or over the bound of 64 outstanding).
	StalePTS int64
}

// Init opens the decoder. It fails for a codec other than H.264/H.265 or when FFmpeg lacks
// the decoder.
func (d *Decoder) Init() error {
	if d.SkipNonRef && d.ReorderPTS {
		return errors.New("codec: SkipNonRef with ReorderPTS: the skipped pictures' stamps would shift the others'")
	}
	if err := ffmpeg.CheckLayout(); err != nil {
		return err
	}
	var id astiav.CodecID
	switch d.Codec {
	case media.CodecH264:
		id = astiav.CodecIDH264
	case media.CodecH265:
		id = astiav.CodecIDHevc
	default:
		return fmt.Errorf("codec: cannot decode %v: H.264 and H.265 only", d.Codec)
	}
	c := astiav.FindDecoder(id)
	if c == nil {
		return fmt.Errorf("codec: this FFmpeg build has no %v decoder", d.Codec)
	}
	if d.Frames <= 0 {
		d.Frames = DefaultFrames
	}
	if d.Name == "" {
		d.Name = "ffmpeg-" + d.Codec.String()
	}
	d.cc = astiav.AllocCodecContext(c)
	d.pkt = astiav.AllocPacket()
	d.scratch = astiav.AllocFrame()
	if d.cc == nil || d.pkt == nil || d.scratch == nil {
		d.Close()
		return errors.New("codec: out of memory allocating the decoder")
	}
	threads := d.Threads
	switch {
	case threads == 0:
		threads = 1
	case threads < 0:
		threads = 0 // FFmpeg: one per CPU
	}
	d.cc.SetThreadCount(threads)
	if threads != 1 {
		d.cc.SetThreadType(astiav.ThreadTypeFrame | astiav.ThreadTypeSlice)
	}
	d.cc.SetTimeBase(nanos)
	d.setups = ffmpeg.CountSetups(d.cc)
	ffmpeg.SetSkipNonRef(d.cc, d.SkipNonRef)
	ffmpeg.SetPacketTimeBase(d.cc, nanos.Num(), nanos.Den())
	if err := d.cc.Open(c, nil); err != nil {
		d.Close()
		return fmt.Errorf("codec: opening FFmpeg's %v decoder: %w", d.Codec, err)
	}
	d.pool = frame.NewPool(d.Name, d.Frames, newSWFrame)
	d.stats.Pools = 1
	return nil
}

// Decode sends one access unit and calls emit for every frame that comes out, in presentation
// order. emit owns one reference to the frame (it must Release it or pass it on); an error
// from emit stops Decode and is returned.
//
// Errors wrapping ErrCorrupt (a *DecodeError) mean this access unit or a picture was lost: the
// caller counts a drop and continues, and decoding recovers by the next key frame at the
// latest. Access units before the first key frame are skipped with such an error too. Decode
// returns ctx.Err() when ctx ends while it waits for a free frame (the picture is dropped).
// A nil au drains the decoder like Flush (NVDEC's convention).
func (d *Decoder) Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	if d.cc == nil {
		return errors.New("codec: Decode before Init or after Close")
	}
	if au == nil {
		return d.Flush(ctx, emit)
	}
	if !d.synced {
		if !au.Key {
			d.stats.Skipped++
			return &DecodeError{PTS: au.PTS, Reason: "waiting for the first key frame"}
		}
		d.synced = true
		if d.key.resetFor(d.Codec, au) {
			ffmpeg.FlushDecoder(d.cc)
		}
	}
	if len(au.Data) == 0 {
		return nil
	}
	flags := 0
	if au.Key {
		flags |= ffmpeg.FlagKey
	}
	if au.Discard {
		flags |= ffmpeg.FlagDiscard
	}
	if !au.Wallclock.IsZero() {
		d.clocks.put(int64(au.PTS), au.Wallclock)
	}
	d.stats.AccessUnits++
	var sendErr error
	for try := 0; ; try++ {
		st, err := ffmpeg.SendPacket(d.cc, d.pkt, au.Data, int64(au.PTS), int64(au.DTS), flags)
		if err != nil {
			d.stats.Rejected++
			sendErr = &DecodeError{PTS: au.PTS, Reason: "rejected access unit", Err: err}
			break
		}
		if st == ffmpeg.OK {
			if d.ReorderPTS && !au.Discard {
				d.order.push(int64(au.PTS))
			}
			break
		}
		if try == 2 { // drained twice and still refused: FFmpeg's state is broken
			return fmt.Errorf("codec: the %v decoder accepts no input (status %d)", d.Codec, st)
		}
		// the decoder holds output (receive drains it) or was left at end of stream (reset)
		if st == ffmpeg.EOF {
			ffmpeg.FlushDecoder(d.cc)
			d.order.reset()
		}
		if err := d.receive(ctx, emit); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			sendErr = err
		}
	}
	if err := d.receive(ctx, emit); err != nil && (sendErr == nil || !errors.Is(err, ErrCorrupt)) {
		return err
	}
	return sendErr
}

// Flush drains the frames the decoder still holds at the end of the stream and emits them.
// The decoder is then reset: it can decode a new stream, from a key frame. Errors are those of
// Decode: wrapping ErrCorrupt when a picture was lost.
func (d *Decoder) Flush(ctx context.Context, emit func(*frame.Frame) error) error {
	if d.cc == nil {
		return errors.New("codec: Flush before Init or after Close")
	}
	var lost error
	if _, err := ffmpeg.SendPacket(d.cc, d.pkt, nil, 0, 0, 0); err != nil {
		// FFmpeg took the end-of-stream marker and reports a failure to decode data sent
		// before it (with frame threading); the pictures it still holds come out below
		d.stats.Rejected++
		lost = &DecodeError{PTS: -1, Reason: "decoding failed while draining", Err: err}
	}
	err := d.receive(ctx, emit)
	ffmpeg.FlushDecoder(d.cc)
	d.order.reset()
	d.synced, d.key.held = false, false
	if err != nil {
		return err
	}
	return lost
}

// ProbeKey decodes the key frame au alone (an idle stream's, on a decoder that several
// streams share) and emits its picture, without ending the stream where it can (probeKey:
// keyprobe.go). emit's contract is Decode's; errors are Decode's and Flush's.
func (d *Decoder) ProbeKey(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) (KeyProbe, error) {
	if d.cc == nil {
		return KeyProbe{}, errors.New("codec: ProbeKey before Init or after Close")
	}
	p, err := probeKey(d, d.Codec, ctx, au, emit)
	d.synced = false
	return p, err
}

func (d *Decoder) keyState() *keyState { return &d.key }

// Park emits the pictures the decoder still holds, as Flush does, for a stream that goes idle
// and gives its decoder back (decpool), but keeps the decoder set up where it can (park:
// keyprobe.go), so that the stream waking on it later does not set it up again. The decoder
// then takes key frames only. Errors are Flush's.
func (d *Decoder) Park(ctx context.Context, emit func(*frame.Frame) error) error {
	if d.cc == nil {
		return errors.New("codec: Park before Init or after Close")
	}
	err := park(d, d.Codec, ctx, emit)
	d.order.reset()
	d.synced = false
	return err
}

func (d *Decoder) resetOutput() {
	ffmpeg.ResetOutput(d.cc, d.pkt) // refused by design
}

func (d *Decoder) canPush() bool { return d.Threads == 0 || d.Threads == 1 }

// pushEOS sends an H.264 end of sequence and emits the picture it pushes out.
func (d *Decoder) pushEOS(ctx context.Context, emit func(*frame.Frame) error) error {
	if _, err := ffmpeg.SendPacket(d.cc, d.pkt, ffmpeg.EndOfSequenceH264, astiav.NoPtsValue, astiav.NoPtsValue, 0); err != nil {
		d.stats.Rejected++
		return &DecodeError{PTS: -1, Reason: "end of sequence rejected", Err: err}
	}
	return d.receive(ctx, emit)
}

// Setups returns how many times FFmpeg set the decoder up (ffmpeg.Setups): once for a
// stream, again for a new picture size and, with H.264, after every Flush.
func (d *Decoder) Setups() int64 { return d.setups.N() }

// receive emits every picture the decoder has ready. A picture that cannot be used (decode
// error, concealed errors) is counted and reported after the others were emitted.
func (d *Decoder) receive(ctx context.Context, emit func(*frame.Frame) error) error {
	var lost error
	for failures := 0; ; {
		st, err := ffmpeg.ReceiveFrame(d.cc, d.scratch)
		if err != nil {
			// with frame threading an access unit's error surfaces here
			d.stats.Rejected++
			if d.ReorderPTS {
				d.order.lose()
			}
			if lost == nil {
				lost = &DecodeError{PTS: -1, Reason: "decoding failed", Err: err}
			}
			if failures++; failures > 64 { // one per frame thread at most, normally
				return lost
			}
			continue
		}
		if st != ffmpeg.OK {
			return lost
		}
		d.info.Read(d.scratch)
		if d.ReorderPTS { // every picture out takes a stamp, also one dropped below
			d.shown = d.order.next(d.pts(), d.info.Key)
		}
		if d.info.Corrupt && !d.OutputCorrupt {
			d.stats.Concealed++
			if lost == nil {
				lost = &DecodeError{PTS: time.Duration(d.pts()), Reason: "picture with concealed errors dropped"}
			}
			d.scratch.Unref()
			continue
		}
		f, err := d.take(ctx)
		if err != nil {
			d.stats.Dropped++
			d.scratch.Unref()
			return err
		}
		if err := emit(f); err != nil {
			return err
		}
	}
}

// take moves the picture in d.scratch (described by d.info) into a pool frame.
func (d *Decoder) take(ctx context.Context) (*frame.Frame, error) {
	key := poolKey{d.info.Width, d.info.Height, d.info.Format}
	convert := false
	switch d.info.Format {
	case astiav.PixelFormatYuv420P, astiav.PixelFormatYuvj420P, astiav.PixelFormatNv12:
	default:
		convert = true
		key.format = astiav.PixelFormatYuv420P
		if d.fullRange() {
			key.format = astiav.PixelFormatYuvj420P
		}
	}
	switch {
	case d.poolKey == (poolKey{}):
		d.poolKey = key // the first picture: Init's pool serves it
	case key != d.poolKey:
		d.newPool(key)
	}
	f, err := d.pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	b := f.Backing.(*swFrame)
	pts := d.pts()
	fullRange := d.fullRange()
	if convert {
		if err := d.convert(b.f, key); err != nil {
			f.Release()
			d.scratch.Unref()
			return nil, err
		}
		d.scratch.Unref()
		d.info.Read(b.f)
	} else {
		b.f.MoveRef(d.scratch) // zero-copy: the pool frame takes the decoder's buffers
	}
	i := &d.info
	f.Width, f.Height = i.Width, i.Height
	f.FullRange = fullRange
	f.PTS = time.Duration(pts)
	if d.ReorderPTS {
		f.PTS = time.Duration(d.shown)
	}
	f.Wallclock = d.clocks.get(pts)
	f.Index = d.index
	d.index++
	d.stats.Frames++
	chroma := (i.Height + 1) / 2
	if i.Format == astiav.PixelFormatNv12 {
		f.Format = frame.FormatNV12
		d.plane(f, 0, i.Height)
		d.plane(f, 1, chroma)
		f.Strides[2] = 0
	} else {
		f.Format = frame.FormatI420
		d.plane(f, 0, i.Height)
		d.plane(f, 1, chroma)
		d.plane(f, 2, chroma)
	}
	return f, nil
}

// plane points f's plane k at d.info's plane k, rows rows tall.
func (d *Decoder) plane(f *frame.Frame, k, rows int) {
	f.Planes[k] = unsafe.Slice((*byte)(d.info.Data[k]), d.info.Linesize[k]*rows)
	f.Strides[k] = d.info.Linesize[k]
}

// pts returns the presentation time of the picture in d.info, nanoseconds.
func (d *Decoder) pts() int64 {
	if d.info.PTS != astiav.NoPtsValue {
		return d.info.PTS
	}
	return d.info.BestEffortTS
}

func (d *Decoder) fullRange() bool {
	return d.info.Format == astiav.PixelFormatYuvj420P || d.info.ColorRange == astiav.ColorRangeJpeg
}

// newPool replaces the frame pool for pictures described by key.
func (d *Decoder) newPool(key poolKey) {
	d.pool.Close() // frees the idle frames; held ones are freed on release
	d.retired = append(d.retired, d.pool)
	d.poolKey = key
	d.stats.Pools++
	d.pool = frame.NewPool(fmt.Sprintf("%s %dx%d", d.Name, key.width, key.height), d.Frames, newSWFrame)
}

// convert scales d.scratch into dst's own buffer with format key.format (8-bit 4:2:0).
func (d *Decoder) convert(dst *astiav.Frame, key poolKey) error {
	if d.sws == nil || d.swsKey != (poolKey{d.info.Width, d.info.Height, d.info.Format}) {
		if d.sws != nil {
			d.sws.Free()
			d.sws = nil
		}
		sws, err := astiav.CreateSoftwareScaleContext(d.info.Width, d.info.Height, d.info.Format,
			key.width, key.height, key.format, astiav.NewSoftwareScaleContextFlags(astiav.SoftwareScaleContextFlagBicubic))
		if err != nil {
			return fmt.Errorf("codec: cannot convert %s pictures to %s: %w", d.info.Format, key.format, err)
		}
		d.sws, d.swsKey = sws, poolKey{d.info.Width, d.info.Height, d.info.Format}
	}
	dst.SetWidth(key.width)
	dst.SetHeight(key.height)
	dst.SetPixelFormat(key.format)
	if err := d.sws.ScaleFrame(d.scratch, dst); err != nil {
		return fmt.Errorf("codec: converting a %s picture to %s: %w", d.info.Format, key.format, err)
	}
	d.stats.Converted++
	return nil
}

// Pool returns the current frame pool, for accounting. It is replaced when the picture size
// changes, so read it again rather than keeping it.
func (d *Decoder) Pool() *frame.Pool { return d.pool }

// Stats returns the decoder's counters.
func (d *Decoder) Stats() Stats {
	st := d.stats
	st.StalePTS = d.order.stale
	return st
}

// Close frees the decoder. Frames still held stay valid until released. The error reports
// frames of any of the decoder's pools never released (see frame.Pool.Close); call it after
// the consumers released their frames. Safe to call more than once.
func (d *Decoder) Close() error {
	if d.cc != nil {
		d.cc.Free()
		d.cc = nil
	}
	d.setups.Free()
	if d.pkt != nil {
		d.pkt.Free()
		d.pkt = nil
	}
	if d.scratch != nil {
		d.scratch.Free()
		d.scratch = nil
	}
	if d.sws != nil {
		d.sws.Free()
		d.sws = nil
	}
	var errs []error
	for _, p := range d.retired {
		errs = append(errs, p.Close())
	}
	if d.pool != nil {
		errs = append(errs, d.pool.Close())
	}
	return errors.Join(errs...)
}
