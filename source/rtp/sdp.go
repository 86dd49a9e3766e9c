package rtp

import (
	"fmt"
	"strings"

	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/sdpunmarshaler"

	"github.com/vinfer/vinfer/media"
)

// Stream is what an SDP says about a video stream.
type Stream struct {
	Codec       media.Codec
	PayloadType uint8
	// ParamSets are the out-of-band parameter sets (sprop-parameter-sets, RFC 6184 §8.1, or
	// sprop-vps/sps/pps, RFC 7798 §7.1), possibly none.
	ParamSets [][]byte
}

// FormatStream returns the Stream of an RTSP/SDP format. It returns an error for formats other
// than H.264 and H.265, or for H.264 interleaved mode (packetization-mode=2).
func FormatStream(f format.Format) (Stream, error) {
	switch f := f.(type) {
	case *format.H264:
		if f.PacketizationMode > 1 {
			return Stream{}, fmt.Errorf("H.264 packetization-mode=%d (interleaved) is not supported; configure the camera for mode 0 or 1", f.PacketizationMode)
		}
		s := Stream{Codec: media.CodecH264, PayloadType: f.PayloadTyp}
		for _, ps := range [][]byte{f.SPS, f.PPS} {
			if len(ps) > 0 {
				s.ParamSets = append(s.ParamSets, ps)
			}
		}
		return s, nil
	case *format.H265:
		if f.MaxDONDiff != 0 {
			return Stream{}, fmt.Errorf("H.265 sprop-max-don-diff=%d (decoding order numbers) is not supported", f.MaxDONDiff)
		}
		s := Stream{Codec: media.CodecH265, PayloadType: f.PayloadTyp}
		for _, ps := range [][]byte{f.VPS, f.SPS, f.PPS} {
			if len(ps) > 0 {
				s.ParamSets = append(s.ParamSets, ps)
			}
		}
		return s, nil
	}
	return Stream{}, fmt.Errorf("video format %s is not supported; vinfer decodes H.264 and H.265", f.RTPMap())
}

// FindVideo returns the first H.264 or H.265 media of a session description. When there is
// none it returns an error naming the formats found.
func FindVideo(desc *description.Session) (*description.Media, format.Format, Stream, error) {
	var found []string
	var firstErr error
	for _, m := range desc.Medias {
		if m.Type != description.MediaTypeVideo || m.IsBackChannel {
			continue
		}
		for _, f := range m.Formats {
			s, err := FormatStream(f)
			if err == nil {
				return m, f, s, nil
			}
			if firstErr == nil {
				firstErr = err
			}
			found = append(found, f.RTPMap())
		}
	}
	if firstErr != nil {
		return nil, nil, Stream{}, fmt.Errorf("no usable video stream (found %s): %w", strings.Join(found, ", "), firstErr)
	}
	return nil, nil, Stream{}, fmt.Errorf("the session has no video stream; vinfer decodes H.264 and H.265")
}

// ParseSDP reads the video stream of an SDP document (RFC 8866), such as the one
// `ffmpeg -f rtp -sdp_file` writes or a GB28181 INVITE carries.
// Parameter sets are read by SpropParamSets (any count and order, bad entries skipped); an
// sprop that does not decode never fails the parse. warn reports skipped entries.
func ParseSDP(b []byte) (s Stream, warn, err error) {
	desc, err := ParseSession(b)
	if err != nil {
		return Stream{}, nil, err
	}
	_, _, s, err = FindVideo(desc)
	if err != nil {
		return Stream{}, nil, fmt.Errorf("SDP: %w", err)
	}
	s.ParamSets, warn = s.withSprop(b)
	return s, warn, nil
}

// ParseSession parses an SDP document (RFC 8866); when the parser rejects its sprop
// parameters (bad base64), it parses it again without them.
func ParseSession(b []byte) (*description.Session, error) {
	desc, err := parseSession(b)
	if err != nil {
		if d2, err2 := parseSession(StripSprop(b)); err2 == nil {
			return d2, nil
		}
		return nil, fmt.Errorf("SDP: %w", err)
	}
	return desc, nil
}

func parseSession(b []byte) (*description.Session, error) {
	sd, err := sdpunmarshaler.Unmarshal(b)
	if err != nil {
		return nil, err
	}
	var desc description.Session
	if err := desc.Unmarshal2(sd); err != nil {
		return nil, err
	}
	return &desc, nil
}

// withSprop returns the stream's parameter sets read from the raw SDP by SpropParamSets when
// it finds any (they include those the format parser dropped: an SPS without a PPS, a third
// entry), else those the format gave.
func (s Stream) withSprop(sdp []byte) ([][]byte, error) {
	sets, warn := SpropParamSets(sdp, s.PayloadType, s.Codec)
	if len(sets) == 0 {
		return s.ParamSets, warn
	}
	return sets, warn
}

// WithSprop is withSprop for callers that hold the raw SDP of a session (RTSP DESCRIBE).
func (s Stream) WithSprop(sdp []byte) ([][]byte, error) { return s.withSprop(sdp) }
