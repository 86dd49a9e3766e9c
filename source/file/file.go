// Package file reads H.264 and H.265 video from files (MP4, MKV, MPEG-TS, raw Annex-B and
// anything else FFmpeg's demuxers open) and delivers it as Annex-B access units.
//
// Containers that store length-prefixed NAL units with out-of-band parameter sets (MP4/MOV's
// avcC/hvcC, ISO/IEC 14496-15; Matroska's CodecPrivate) go through FFmpeg's h264_mp4toannexb or
// hevc_mp4toannexb bitstream filter, which rewrites them to start codes and puts the parameter
// sets in front of every key frame. Containers that already carry Annex-B (MPEG-TS, ISO/IEC
// 13818-1 stream types 0x1B/0x24; raw .h264/.h265) are passed through, with the parameter sets
// the demuxer found inserted before a key frame that lacks them.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/internal/ffmpeg"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
)

var _ source.Source = (*Source)(nil)

// nanos is the time base of time.Duration.
var nanos = astiav.NewRational(1, int(time.Second))

// Source reads the first H.264 or H.265 video stream of one file. Read and Close must not run
// concurrently (call Close after the reader stopped); Info, Live and Loops may be called from
// any goroutine.
//
// Timestamps: PTS and DTS are the container's, rescaled from the stream time base to
// time.Duration and counted from the stream's start time (its first PTS), so the first frame
// in presentation order has PTS 0; DTS is negative for the first frames of a stream with
// B-frames, and PTS for the pre-roll pictures an MP4 edit list discards (AccessUnit.Discard).
// A packet without DTS gets the previous DTS plus one frame duration (1/frame rate), one
// without PTS its DTS: raw .h264/.h265 files have no timestamps at all, so their PTS count
// frames in decoding order, not presentation order (with B-frames), and Info says so
// (PTSInDecodeOrder: the decoder re-stamps the frames, codec.Decoder.ReorderPTS). A DTS that
// goes back (MPEG-TS segments spliced together) continues the timeline one frame after the
// last DTS and the largest PTS, on an access unit marked Discontinuity: PTS never go back.
//
// Read does not allocate in steady state: AccessUnit.Data is a view of FFmpeg's packet buffer,
// valid until the next Read or Close.
type Source struct {
	// Path of the file.
	Path string
	// Loop restarts at the beginning at the end of the file instead of returning io.EOF. PTS and
	// DTS keep increasing across restarts: each pass is offset by the length of the previous
	// ones (last PTS plus one frame duration). Raw Annex-B streams loop too (rewind).
	Loop bool
	// Roots, when not nil, are the directories the file must lie in (symlinks resolved).
	Roots []string
	// OpenTimeout bounds opening and probing the file (0: source.DefaultOpenTimeout).
	OpenTimeout time.Duration
	// Realtime paces Read at the file's own rate (each access unit's DTS against the wall
	// clock, continuing across loops; Pacer), and makes the source Live: a stand-in camera.
	Realtime bool
	pacer    Pacer

	interrupt astiav.IOInterrupter
	timedOut  atomic.Bool

	fc       *astiav.FormatContext
	stream   *astiav.Stream
	index    int
	tb       astiav.Rational
	bsf      *astiav.BitStreamFilterContext
	in, out  *astiav.Packet
	pending  bool // bsf may hold output
	draining bool // bsf was sent end of stream
	params   paramSets
	info     media.StreamInfo
	frameDur int64 // one frame in stream time base; ≥ 1

	start   int64 // stream start in tb; NoPtsValue until known
	maxPTS  int64 // largest relative PTS of the current pass
	lastDTS int64
	splice  int64        // added after a DTS that went back (spliced segments), in tb; per pass
	offset  int64        // loop offset in tb
	passAUs int64        // access units delivered in the current pass
	loops   atomic.Int64 // passes completed; read by Loops from any goroutine
	au      media.AccessUnit
	closed  bool
}

// Init opens the file and selects its video stream. It fails when the file is missing or not
// a media file FFmpeg can read, when it has no video stream, when its video is neither H.264
// nor H.265 (the error names the codec), and when an MP4 lacks its index (truncated). Close
// releases what Init opened, also after a failed Init.
func (s *Source) Init() error {
	if err := ffmpeg.CheckLayout(); err != nil {
		return err
	}
	if s.Path == "" {
		return errors.New("file: no path given")
	}
	// The file is opened and checked here, and FFmpeg reads that open file (through its
	// /proc/self/fd name), not whatever the path names by the time FFmpeg opens it: a FIFO
	// swapped in after the check would park the thread in open(2) (issue 25, item 5).
	f, err := source.OpenFile(s.Path, s.Roots)
	if err != nil {
		return fmt.Errorf("file %w", err)
	}
	defer f.Close() // FFmpeg holds its own descriptor once open
	s.fc = astiav.AllocFormatContext()
	if s.fc == nil {
		return errors.New("file: avformat_alloc_context failed (out of memory)")
	}
	stop := s.deadline()
	defer stop()
	if testHookOpen != nil {
		testHookOpen(s)
	}
	opts := openOptions()
	defer opts.Free()
	// "file:" keeps FFmpeg from reading a protocol out of the path; the whitelist from
	// following one out of the file (playlists, concat lists).
	if err := s.fc.OpenInput("file:"+source.FDPath(f), nil, opts); err != nil {
		s.fc.Free() // avformat_open_input freed the context already; this drops astiav's entry
		s.fc = nil
		return openError(s.Path, f, err)
	}
	if err := s.fc.FindStreamInfo(nil); err != nil {
		if s.timedOut.Load() {
			return fmt.Errorf("file %s: %w probing the stream parameters", s.Path, ErrTimeout)
		}
		return fmt.Errorf("file %s: reading stream parameters: %w (the file may be damaged)", s.Path, err)
	}
	if err := s.selectStream(); err != nil {
		return err
	}
	s.in, s.out = astiav.AllocPacket(), astiav.AllocPacket()
	if s.in == nil || s.out == nil {
		return errors.New("file: av_packet_alloc failed (out of memory)")
	}
	if err := s.initFilter(); err != nil {
		return err
	}
	s.start = s.stream.StartTime()
	s.au.Codec = s.info.Codec
	return nil
}

// selectStream picks the first H.264 or H.265 video stream and fills s.info.
func (s *Source) selectStream() error {
	var others []string
	for _, st := range s.fc.Streams() {
		cp := st.CodecParameters()
		if cp.MediaType() != astiav.MediaTypeVideo {
			continue
		}
		var c media.Codec
		switch cp.CodecID() {
		case astiav.CodecIDH264:
			c = media.CodecH264
		case astiav.CodecIDHevc:
			c = media.CodecH265
		default:
			others = append(others, cp.CodecID().Name())
			continue
		}
		s.stream, s.index, s.tb = st, st.Index(), st.TimeBase()
		s.info = media.StreamInfo{Codec: c, Width: cp.Width(), Height: cp.Height()}
		break
	}
	if s.stream == nil {
		if len(others) == 0 {
			return fmt.Errorf("file %s: no video stream (format %s): give a file with H.264 or "+
				"H.265 video", s.Path, s.fc.InputFormat().Name())
		}
		return fmt.Errorf("file %s: video codec %v is not supported: vinfer decodes H.264 and "+
			"H.265; transcode with `ffmpeg -i %s -c:v libx264 out.mp4`", s.Path, others, s.Path)
	}
	if s.tb.Num() <= 0 || s.tb.Den() <= 0 {
		return fmt.Errorf("file %s: invalid stream time base %s", s.Path, s.tb)
	}
	fps := s.stream.AvgFrameRate()
	if fps.Num() <= 0 || fps.Den() <= 0 {
		fps = s.stream.RFrameRate()
	}
	if fps.Num() > 0 && fps.Den() > 0 {
		s.info.FrameRate = fps.Float64()
		s.frameDur = astiav.RescaleQ(1, astiav.NewRational(fps.Den(), fps.Num()), s.tb)
	}
	if s.frameDur < 1 {
		s.frameDur = 1
	}
	s.info.Frames = s.stream.NbFrames()
	// raw elementary streams: fill stamps PTS from a frame count in decoding order
	s.info.PTSInDecodeOrder = s.rawStream()
	if d := s.stream.Duration(); d > 0 && d != astiav.NoPtsValue {
		s.info.Duration = time.Duration(astiav.RescaleQ(d, s.tb, nanos))
	} else if d := s.fc.Duration(); d > 0 && d != astiav.NoPtsValue {
		s.info.Duration = time.Duration(d) * time.Second / time.Duration(astiav.TimeBase)
	}
	return nil
}

// initFilter sets up the mp4toannexb bitstream filter when the codec configuration is an
// avcC/hvcC record (ISO/IEC 14496-15 §5.3.3.1, §8.3.3.1: configurationVersion 1), else
// remembers the Annex-B parameter sets for insertion.
func (s *Source) initFilter() error {
	cp := s.stream.CodecParameters()
	extra := cp.ExtraData()
	if len(extra) == 0 || extra[0] != 1 {
		s.params.init(s.info.Codec, extra)
		return nil
	}
	name := "h264_mp4toannexb"
	if s.info.Codec == media.CodecH265 {
		name = "hevc_mp4toannexb"
	}
	f := astiav.FindBitStreamFilterByName(name)
	if f == nil {
		return fmt.Errorf("file %s: FFmpeg lacks the %s bitstream filter", s.Path, name)
	}
	var err error
	if s.bsf, err = astiav.AllocBitStreamFilterContext(f); err != nil {
		return fmt.Errorf("file %s: %s: %w", s.Path, name, err)
	}
	if err := cp.Copy(s.bsf.InputCodecParameters()); err != nil {
		return fmt.Errorf("file %s: %s: %w", s.Path, name, err)
	}
	s.bsf.SetInputTimeBase(s.tb)
	if err := s.bsf.Initialize(); err != nil {
		return fmt.Errorf("file %s: %s rejects the stream's codec configuration: %w", s.Path, name, err)
	}
	return nil
}

// Read returns the next access unit of the video stream in decoding order (with Realtime, when
// its DTS is due). It returns io.EOF at the end of the file (unless Loop), ctx.Err() when ctx
// ends, and an error when the file cannot be read further.
func (s *Source) Read(ctx context.Context) (*media.AccessUnit, error) {
	au, err := s.read(ctx)
	if err != nil || !s.Realtime {
		return au, err
	}
	if err := s.pacer.Wait(ctx, au.DTS); err != nil {
		return nil, err
	}
	return au, nil
}

func (s *Source) read(ctx context.Context) (*media.AccessUnit, error) {
	if s.fc == nil || s.in == nil {
		return nil, errors.New("file: Read before a successful Init, or after Close")
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.pending {
			s.out.Unref()
			st, err := ffmpeg.ReceivePacket(s.bsf, s.out)
			switch {
			case err != nil:
				return nil, fmt.Errorf("file %s: %s: %w", s.Path, s.bsf.Class(), err)
			case st == ffmpeg.OK:
				if au := s.fill(s.out); au != nil {
					return au, nil
				}
				continue
			case st == ffmpeg.EOF:
				s.pending = false
				if err := s.endOfFile(); err != nil {
					return nil, err
				}
				continue
			}
			s.pending = false
		}
		s.in.Unref()
		if err := s.fc.ReadFrame(s.in); err != nil {
			if !errors.Is(err, astiav.ErrEof) {
				return nil, fmt.Errorf("file %s: reading: %w", s.Path, err)
			}
			if s.bsf != nil && !s.draining {
				// flush the filter; its EOF leads to endOfFile
				s.draining = true
				if err := s.bsf.SendPacket(nil); err != nil {
					return nil, fmt.Errorf("file %s: flushing %s: %w", s.Path, s.bsf.Class(), err)
				}
				s.pending = true
				continue
			}
			if err := s.endOfFile(); err != nil {
				return nil, err
			}
			continue
		}
		if s.in.StreamIndex() != s.index {
			continue
		}
		if s.bsf == nil {
			if au := s.fill(s.in); au != nil {
				return au, nil
			}
			continue
		}
		if err := s.bsf.SendPacket(s.in); err != nil {
			return nil, fmt.Errorf("file %s: %s: %w", s.Path, s.bsf.Class(), err)
		}
		s.pending = true
	}
}

// fill turns packet p into s.au; nil for an empty packet.
func (s *Source) fill(p *astiav.Packet) *media.AccessUnit {
	data := ffmpeg.PacketData(p)
	if len(data) == 0 {
		return nil
	}
	key := p.Flags().Has(astiav.PacketFlagKey)
	if key && s.bsf == nil {
		data = s.params.complete(data)
	}
	pts, dts := p.Pts(), p.Dts()
	spliced := false
	if s.start == astiav.NoPtsValue {
		switch {
		case pts != astiav.NoPtsValue:
			s.start = pts
		case dts != astiav.NoPtsValue:
			s.start = dts
		default:
			s.start = 0
		}
	}
	// Raw Annex-B streams carry no timestamps: DTS then counts frames in decoding order, and
	// PTS follows DTS, which is right only for streams without B-frames (PTSInDecodeOrder).
	switch {
	case dts != astiav.NoPtsValue:
		dts -= s.start
		if s.passAUs > 0 && dts+s.splice < s.lastDTS {
			// the timestamps went back: segments spliced together (MPEG-TS files of a
			// recorder concatenated, a camera's counter restarted). The rest follows on,
			// one frame after the last DTS and the largest PTS, so that PTS never go back.
			s.splice = s.lastDTS + s.frameDur - dts
			if pts != astiav.NoPtsValue {
				s.splice = max(s.splice, s.maxPTS+s.frameDur-(pts-s.start))
			}
			spliced = true
		}
		dts += s.splice
	case s.passAUs == 0:
		dts = 0
	default:
		dts = s.lastDTS + s.frameDur
	}
	if pts != astiav.NoPtsValue {
		pts -= s.start - s.splice
	} else {
		pts = dts
	}
	s.lastDTS = dts
	if s.passAUs == 0 || pts > s.maxPTS {
		s.maxPTS = pts
	}
	s.passAUs++
	s.au.Data = data
	s.au.Key = key
	s.au.Discard = p.Flags().Has(astiav.PacketFlagDiscard)
	s.au.Discontinuity = spliced
	s.au.PTS = time.Duration(astiav.RescaleQ(pts+s.offset, s.tb, nanos))
	s.au.DTS = time.Duration(astiav.RescaleQ(dts+s.offset, s.tb, nanos))
	return &s.au
}

// endOfFile returns io.EOF, or rewinds for the next pass when looping.
func (s *Source) endOfFile() error {
	if n := s.info.Frames; n > 0 && s.loops.Load() == 0 && s.passAUs < n*9/10 {
		return fmt.Errorf("file %s: %w: the index lists %d frames but only %d could be read "+
			"(the file was cut short; re-download or re-record it)", s.Path, io.ErrUnexpectedEOF, n, s.passAUs)
	}
	if !s.Loop {
		return io.EOF
	}
	if s.passAUs == 0 {
		return fmt.Errorf("file %s: no video access unit to loop over", s.Path)
	}
	if err := s.rewind(); err != nil {
		return err
	}
	if s.bsf != nil {
		// reopen the filter after its end of stream
		ffmpeg.FlushFilter(s.bsf)
		s.draining = false
	}
	s.offset += s.maxPTS + s.frameDur
	s.passAUs, s.splice = 0, 0
	s.loops.Add(1)
	return nil
}

// rewind goes back to the first access unit of the file for the next pass. A container is
// sought to the stream's start time. A raw Annex-B stream (h264/hevc demuxers, which have no
// timestamps to seek to: FFmpeg refuses with EPERM) is rewound by byte position to the start
// of its data, on the file opened at Init; FFmpeg then drops its parser state, so the next
// pass parses from the first start code again. A container whose timestamp seek fails is
// tried the same way before giving up.
func (s *Source) rewind() error {
	byteSeek := func() error {
		return s.fc.SeekFrame(-1, 0, astiav.NewSeekFlags(astiav.SeekFlagByte, astiav.SeekFlagBackward))
	}
	if s.rawStream() {
		if err := byteSeek(); err != nil {
			return fmt.Errorf("file %s: rewinding the elementary stream to loop: %w", s.Path, err)
		}
		return nil
	}
	start := s.stream.StartTime()
	if start == astiav.NoPtsValue {
		start = 0
	}
	err := s.fc.SeekFrame(s.index, start, astiav.NewSeekFlags(astiav.SeekFlagBackward))
	if err != nil && byteSeek() != nil {
		return fmt.Errorf("file %s: seeking to the start to loop: %w", s.Path, err)
	}
	return nil
}

// rawStream reports an elementary stream without timestamps: FFmpeg's h264 and hevc
// demuxers (flagged AVFMT_NOTIMESTAMPS since FFmpeg 6, not before).
func (s *Source) rawStream() bool {
	f := s.fc.InputFormat()
	return f.Flags().Has(astiav.IOFormatFlagNotimestamps) || f.Name() == "h264" || f.Name() == "hevc"
}

// Info describes the video stream: codec, size, frame rate, container frame count (0 when the
// container has none, e.g. MPEG-TS) and duration.
func (s *Source) Info() media.StreamInfo { return s.info }

// Live reports Realtime: a file is read as fast as the pipeline consumes it, unless paced.
func (s *Source) Live() bool { return s.Realtime }

// Loops returns how many times the file was restarted (Loop).
func (s *Source) Loops() int { return int(s.loops.Load()) }

// Close releases FFmpeg's resources. Safe to call more than once; Read fails afterwards.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.bsf != nil {
		s.bsf.Free()
		s.bsf = nil
	}
	for _, p := range []**astiav.Packet{&s.in, &s.out} {
		if *p != nil {
			(*p).Free()
			*p = nil
		}
	}
	if s.fc != nil {
		s.fc.CloseInput() // frees the context too
		s.fc = nil
	}
	s.au.Data = nil
	return nil
}

// openError explains why FFmpeg could not open path (f: the checked file, open).
func openError(path string, f *os.File, err error) error {
	if errors.Is(err, astiav.ErrExit) {
		return fmt.Errorf("file %s: %w opening the file", path, ErrTimeout)
	}
	var head [12]byte
	n := 0
	n, _ = f.ReadAt(head[:], 0)
	switch {
	case n >= 8 && bytes.Equal(head[4:8], []byte("ftyp")):
		return fmt.Errorf("file %s: an MP4/MOV file FFmpeg cannot read (%w): its index (moov "+
			"box) is missing or damaged, usually because the file is truncated or still being "+
			"written; re-create it, or remux a complete copy with `ffmpeg -i IN -c copy "+
			"-movflags +faststart OUT.mp4`", path, err)
	case n == 0:
		return fmt.Errorf("file %s: cannot open (%w): the file is empty or unreadable", path, err)
	}
	return fmt.Errorf("file %s: not a media file FFmpeg can read (%w): give a video file "+
		"(MP4, MKV, MPEG-TS, raw H.264/H.265)", path, err)
}
