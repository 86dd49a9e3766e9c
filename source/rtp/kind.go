package rtp

import (
	"fmt"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/urlparam"
)

// Kind receives RTP over UDP: rtp://[host]:port?codec=h264|h265[&pt=N][&ssrc=N][&sdp=FILE].
// codec may be left out when sdp names a session description (RFC 8866) that gives it.
var Kind = source.Kind{Schemes: []string{"rtp"}, Open: openStream}

func openStream(s *config.Stream, p source.Policy) (source.Source, error) {
	r, err := ParseURL(s.Source)
	if err != nil {
		return nil, err
	}
	r.Roots = p.Roots
	if err := r.Init(); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseURL returns the Source an rtp:// URL describes, not yet initialized.
func ParseURL(raw string) (*Source, error) {
	u, q, err := urlparam.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("rtp: %w", err)
	}
	r := &Source{ListenAddr: u.Host, SDPFile: q.String("sdp")}
	switch q.OneOf("codec", "", "h264", "avc", "h265", "hevc") {
	case "h264", "avc":
		r.Codec = media.CodecH264
	case "h265", "hevc":
		r.Codec = media.CodecH265
	default:
		if r.SDPFile == "" {
			q.OneOf("codec", "missing", "h264", "h265") // reports the missing codec
		}
	}
	r.PayloadType = uint8(q.Uint("pt", 127, 0))
	r.SSRC = uint32(q.Uint("ssrc", 1<<32-1, 0))
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("rtp: %w", err)
	}
	return r, nil
}
