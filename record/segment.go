package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// timescale is the segments' media timescale, the 90 kHz of RTP video.
const timescale = 90000

func ticks(d time.Duration) int64 { return int64(d) * timescale / int64(time.Second) }

// Errors of segment writing.
var (
	ErrNoParamSets  = errors.New("record: no parameter sets in the key frame")
	errUnknownCodec = errors.New("record: unknown codec")
)

// unit is one access unit kept for a GOP (its own copy of the Annex-B data).
type unit struct {
	data     []byte
	pts, dts time.Duration
	key      bool
}

// gop is a key frame and the units up to the next one.
type gop struct {
	codec   media.Codec
	units   []unit
	wall    time.Time     // the key frame's wall time
	endWall time.Time     // when the next key frame came (the GOP's end)
	nextDTS time.Duration // the next key frame's DTS (the last unit's duration); -1: unknown
	bytes   int
	newSeg  bool // a discontinuity or a PTS going back before it: start a new segment
}

// params are a key frame's parameter sets.
type params struct {
	codec         media.Codec
	vps, sps, pps []byte
}

func paramsOf(c media.Codec, annexb []byte) params {
	p := params{codec: c}
	for n, rest := h26x.NextNALU(annexb); len(n) > 0; n, rest = h26x.NextNALU(rest) {
		switch h26x.Classify(c, n) {
		case h26x.KindVPS:
			p.vps = append(p.vps[:0:0], n...)
		case h26x.KindSPS:
			p.sps = append(p.sps[:0:0], n...)
		case h26x.KindPPS:
			p.pps = append(p.pps[:0:0], n...)
		}
	}
	return p
}

func (p params) equal(q params) bool {
	return p.codec == q.codec && bytes.Equal(p.vps, q.vps) && bytes.Equal(p.sps, q.sps) && bytes.Equal(p.pps, q.pps)
}

func (p params) mp4Codec() (codecs.Codec, error) {
	switch p.codec {
	case media.CodecH264:
		if p.sps == nil || p.pps == nil {
			return nil, ErrNoParamSets
		}
		return &codecs.H264{SPS: p.sps, PPS: p.pps}, nil
	case media.CodecH265:
		if p.vps == nil || p.sps == nil || p.pps == nil {
			return nil, ErrNoParamSets
		}
		return &codecs.H265{VPS: p.vps, SPS: p.sps, PPS: p.pps}, nil
	}
	return nil, fmt.Errorf("%w %v", errUnknownCodec, p.codec)
}

// avcc converts an Annex-B access unit to 4-byte length-prefixed NAL units (ISO/IEC 14496-15
// §5.3.2), leaving out delimiters and the parameter sets the sample entry has.
func avcc(p *params, annexb []byte, dst []byte) []byte {
	for n, rest := h26x.NextNALU(annexb); len(n) > 0; n, rest = h26x.NextNALU(rest) {
		switch h26x.Classify(p.codec, n) {
		case h26x.KindAUD:
			continue
		case h26x.KindSPS:
			if bytes.Equal(n, p.sps) {
				continue
			}
		case h26x.KindPPS:
			if bytes.Equal(n, p.pps) {
				continue
			}
		case h26x.KindVPS:
			if bytes.Equal(n, p.vps) {
				continue
			}
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(n)))
		dst = append(dst, n...)
	}
	return dst
}

// segment is the file a stream's writer appends fragments to.
type segment struct {
	f       *os.File
	path    string
	start   time.Time
	end     time.Time
	params  params
	seq     uint32
	baseDTS time.Duration // the first unit's DTS: the file's time 0
	size    int64
}

// Segment file names.
const (
	partExt = ".part"
	segExt  = ".mp4"
	msWidth = 15
)

func msName(t time.Time) string { return fmt.Sprintf("%0*d", msWidth, max(t.UnixMilli(), 0)) }

// segName is the name of a closed segment spanning [start, end].
func segName(start, end time.Time) string { return msName(start) + "-" + msName(end) + segExt }

// parseSegName reads a closed segment's name; ok is false for any other name.
func parseSegName(name string) (start, end time.Time, ok bool) {
	base, found := strings.CutSuffix(name, segExt)
	a, b, cut := strings.Cut(base, "-")
	if !found || !cut || len(a) != msWidth || len(b) != msWidth {
		return start, end, false
	}
	s, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || e < s {
		return start, end, false
	}
	return time.UnixMilli(s), time.UnixMilli(e), true
}

// openSegment creates DIR/START.part with the init section of p.
func openSegment(dir string, start time.Time, p params, baseDTS time.Duration) (*segment, error) {
	c, err := p.mp4Codec()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var buf seekablebuffer.Buffer
	init := fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: timescale, Codec: c}}}
	if err := init.Marshal(&buf); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, msName(start)+partExt)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(append(buf.Bytes(), zeroBox(baseDTS)...)); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &segment{f: f, path: path, start: start, end: start, params: p, baseDTS: baseDTS, size: int64(buf.Len() + zeroBoxLen)}, nil
}

// fragment appends g as one fragment (moof + mdat); a failed write leaves the file as it was.
func (s *segment) fragment(g *gop, scratch *seekablebuffer.Buffer) error {
	samples := make([]*fmp4.Sample, len(g.units))
	for i := range g.units {
		u := &g.units[i]
		var dur int64
		switch {
		case i+1 < len(g.units):
			dur = ticks(g.units[i+1].dts) - ticks(u.dts)
		case g.nextDTS >= 0:
			dur = ticks(g.nextDTS) - ticks(u.dts)
		case i > 0:
			dur = ticks(u.dts) - ticks(g.units[i-1].dts)
		default:
			dur = timescale / 25
		}
		if dur <= 0 || dur > 10*timescale { // equal, backwards or jumping DTS: keep time moving
			dur = 1
		}
		samples[i] = &fmp4.Sample{Duration: uint32(dur), PTSOffset: int32(ticks(u.pts) - ticks(u.dts)),
			IsNonSyncSample: !u.key, Payload: avcc(&s.params, u.data, nil)}
	}
	base := max(ticks(g.units[0].dts)-ticks(s.baseDTS), 0) // the file's time starts at 0
	scratch.Reset()
	p := fmp4.Part{SequenceNumber: s.seq + 1, Tracks: []*fmp4.PartTrack{{ID: 1, BaseTime: uint64(base), Samples: samples}}}
	if err := p.Marshal(scratch); err != nil {
		return err
	}
	if _, err := s.f.Write(scratch.Bytes()); err != nil {
		_ = s.f.Truncate(s.size)
		_, _ = s.f.Seek(s.size, 0)
		return err
	}
	s.seq++ // only once written: a segment whose every write failed has none (close removes it)
	s.size += int64(scratch.Len())
	s.end = g.endWall
	return nil
}

// close closes the file and renames it START-END.mp4; a segment without fragments is removed.
func (s *segment) close() (path string, err error) {
	s.f.Close()
	if s.seq == 0 {
		return "", os.Remove(s.path)
	}
	end := s.end
	if !end.After(s.start) {
		end = s.start.Add(time.Millisecond)
	}
	path = filepath.Join(filepath.Dir(s.path), segName(s.start, end))
	return path, os.Rename(s.path, path)
}
