package liveview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// ErrNoParams: a key frame came without its parameter sets in-band.
var ErrNoParams = errors.New("key frame without parameter sets")

// muxer turns a viewer's access units into fragmented MP4 (ISO/IEC 14496-12 §8.8): an init
// segment (ftyp, moov) at the first key frame, then one fragment (moof, mdat) per access unit,
// on a 90 kHz timeline where media time = PTS + offset.
type muxer struct {
	codec   media.Codec
	offset  int64 // ticks added to DTS and PTS so that the timeline starts at or after 0
	started bool
	seq     uint32
	lastDTS int64
	dur     uint32 // the last DTS step, the next sample's duration until known
	reorder int64  // the largest PTS − DTS so far (ticks): how far the newest PTS runs ahead
	lead    int64  // the smallest PTS − DTS so far, or 0 (ticks, ≤ 0)
	buf     seekablebuffer.Buffer
}

// ticks is d on the 90 kHz clock.
func ticks(d time.Duration) int64 { return d.Nanoseconds() * clock / int64(time.Second) }

// initInfo is the first text message of a fragmented MP4 view.
type initInfo struct {
	Type string `json:"type"` // "init"
	// MIME is the SourceBuffer type: video/mp4; codecs="avc1.PPCCLL" (RFC 6381).
	MIME string `json:"mime"`
	// Offset is what the timeline adds to PTS, in 90 kHz ticks: PTS = media time − offset.
	Offset int64 `json:"offset"`
}

// reorderInfo tells the page how far ahead of the last complete picture the newest PTS may run
// (B-frames): a play head closer than that to the buffered end waits for pictures to come.
// Lead bounds it from the other side: every picture of PTS ≤ the newest DTS + Lead is in.
type reorderInfo struct {
	Type  string `json:"type"` // "reorder"
	Ticks int64  `json:"ticks"`
	Lead  int64  `json:"lead"` // ≤ 0
}

// nalus splits an Annex-B access unit into its NAL units, the parameter sets apart.
func nalus(c media.Codec, au []byte) (vps, sps, pps []byte, rest [][]byte) {
	for b := au; len(b) > 0; {
		var n []byte
		n, b = h26x.NextNALU(b)
		if len(n) == 0 {
			break
		}
		switch h26x.Classify(c, n) {
		case h26x.KindVPS:
			vps = n
		case h26x.KindSPS:
			sps = n
		case h26x.KindPPS:
			pps = n
		case h26x.KindAUD:
		default:
			rest = append(rest, n)
		}
	}
	return
}

// mimeType is the codecs parameter of RFC 6381 for the stream's SPS: avc1.PPCCLL (H.264
// profile_idc, constraint flags, level_idc), hvc1.P.C.TLL.B0 (H.265 profile, compatibility,
// tier and level, ISO/IEC 14496-15 Annex E).
func mimeType(c media.Codec, sps []byte) string {
	if c == media.CodecH265 {
		sps = h264.EmulationPreventionRemove(sps) // the same escaping in H.265 (§7.4.2)
		if len(sps) < 15 {
			return `video/mp4; codecs="hvc1.1.6.L93.B0"`
		}
		ptl := sps[3:] // after the NAL header and the sps_video_parameter_set_id byte
		tier := "L"
		if ptl[0]&0x20 != 0 {
			tier = "H"
		}
		compat := uint32(ptl[1])<<24 | uint32(ptl[2])<<16 | uint32(ptl[3])<<8 | uint32(ptl[4])
		var rev uint32 // the flags in reverse bit order
		for i := range 32 {
			if compat&(1<<i) != 0 {
				rev |= 1 << (31 - i)
			}
		}
		return fmt.Sprintf(`video/mp4; codecs="hvc1.%d.%X.%s%d.B0"`, ptl[0]&0x1f, rev, tier, ptl[11])
	}
	if len(sps) < 4 {
		return `video/mp4; codecs="avc1.42E01F"`
	}
	return fmt.Sprintf(`video/mp4; codecs="avc1.%02X%02X%02X"`, sps[1], sps[2], sps[3])
}

// unit returns the messages for one access unit: at the first key frame the init info (text)
// and segment (binary), then the unit's fragment (binary). Units before it give none.
func (m *muxer) unit(u Unit, send func(text bool, b []byte) error) error {
	vps, sps, pps, rest := nalus(u.Codec, u.Data)
	dts, pts := ticks(u.DTS), ticks(u.PTS)
	if !m.started {
		if !u.Key {
			return nil
		}
		if sps == nil || pps == nil || u.Codec == media.CodecH265 && vps == nil {
			return ErrNoParams
		}
		m.codec, m.started = u.Codec, true
		m.offset = max(0, -dts, -pts)
		var c codecs.Codec = &codecs.H264{SPS: sps, PPS: pps}
		if u.Codec == media.CodecH265 {
			c = &codecs.H265{VPS: vps, SPS: sps, PPS: pps}
		}
		m.buf.Reset()
		if err := (fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: clock, Codec: c}}}).Marshal(&m.buf); err != nil {
			return err
		}
		info, _ := json.Marshal(initInfo{Type: "init", MIME: mimeType(u.Codec, sps), Offset: m.offset})
		if err := send(true, info); err != nil {
			return err
		}
		if err := send(false, append([]byte(nil), m.buf.Bytes()...)); err != nil {
			return err
		}
		m.dur = clock / 30
	} else if step := dts - m.lastDTS; step > 0 && step < 10*clock {
		m.dur = uint32(step)
	}
	if u.Codec != m.codec {
		return defs.ErrLiveCodec
	}
	m.lastDTS = dts
	if pts-dts > m.reorder || pts-dts < m.lead {
		m.reorder, m.lead = max(m.reorder, pts-dts), min(m.lead, pts-dts)
		msg, _ := json.Marshal(reorderInfo{Type: "reorder", Ticks: m.reorder, Lead: m.lead})
		if err := send(true, msg); err != nil {
			return err
		}
	}
	s := &fmp4.Sample{Duration: m.dur, IsNonSyncSample: !u.Key}
	var err error
	if u.Codec == media.CodecH265 {
		err = s.FillH265(int32(pts-dts), rest)
	} else {
		err = s.FillH264(int32(pts-dts), rest)
	}
	if err != nil {
		return err
	}
	m.seq++
	m.buf.Reset()
	p := fmp4.Part{SequenceNumber: m.seq, Tracks: []*fmp4.PartTrack{{ID: 1, BaseTime: uint64(dts + m.offset), Samples: []*fmp4.Sample{s}}}}
	if err := p.Marshal(&m.buf); err != nil {
		return err
	}
	return send(false, append([]byte(nil), m.buf.Bytes()...))
}

// LiveFMP4 implements defs.Live: the viewer joins now (a place of max_viewers), run sends.
func (s *Server) LiveFMP4(stream string) (defs.LiveRun, error) {
	v, err := s.hub.Join(stream)
	if err != nil {
		return nil, err
	}
	s.started.Add(1)
	return func(ctx context.Context, send func(text bool, msg []byte) error) error {
		defer v.Leave()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var results <-chan []byte
		if s.results != nil {
			msgs, cancel := s.results.Subscribe(defs.Subscription{Stream: stream})
			defer cancel()
			results = msgs
		}
		stop := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
			case <-s.ctx.Done():
			case <-stop:
			}
			v.Leave()
		}()
		defer close(stop)
		units := make(chan Unit)
		errc := make(chan error, 1)
		go func() { // the viewer's queue, read apart so that results interleave
			for {
				u, err := v.Next(stop)
				if err != nil {
					errc <- err
					return
				}
				select {
				case units <- u:
				case <-stop:
					errc <- ErrLeft
					return
				}
			}
		}()
		var m muxer
		for {
			select {
			case err := <-errc:
				return err
			case u := <-units:
				if err := m.unit(u, send); err != nil {
					return err
				}
			case r, ok := <-results:
				if !ok {
					results = nil
					continue
				}
				if m.started {
					if err := send(true, r); err != nil {
						return err
					}
				}
			}
		}
	}, nil
}
