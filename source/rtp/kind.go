package rtp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/urlparam"
)

// Kind receives RTP over UDP: rtp://[host]:port?codec=h264|h265[&pt=N][&ssrc=N|any]
// [&sender=IP[:port]|first|any][&sdp=FILE]. codec may be left out when sdp names a session
// description (RFC 8866) that gives it.
var Kind = source.Kind{Schemes: []string{"rtp"}, Open: openStream}

func openStream(s *config.Stream, p source.Policy) (source.Source, error) {
	r, err := ParseURL(s.Source)
	if err != nil {
		return nil, err
	}
	r.Roots = p.Roots
	r.Logger, r.Name = slog.Default().With("stream", s.ID), s.ID
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
	if q.Peek("ssrc") == "any" {
		q.String("ssrc")
	} else {
		r.SSRC = uint32(q.Uint("ssrc", 1<<32-1, 0))
	}
	if r.Sender, r.LockAddr, err = ParseSender(q.String("sender")); err != nil {
		return nil, fmt.Errorf("rtp: %w", err)
	}
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("rtp: %w", err)
	}
	return r, nil
}

// ErrSender is returned for a sender= parameter that is neither an address nor a policy word.
var ErrSender = errors.New("sender= wants IP, IP:port, first or any")

// ParseSender reads a sender= URL parameter: "" or "any" follows whichever sender holds the
// stream (Receiver.Holdover), "first" locks the stream to the first sender's IP address, an IP
// or IP:port pins it.
func ParseSender(v string) (pin netip.AddrPort, lockFirst bool, err error) {
	switch v {
	case "", "any":
		return netip.AddrPort{}, false, nil
	case "first":
		return netip.AddrPort{}, true, nil
	}
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap, false, nil
	}
	if a, err := netip.ParseAddr(v); err == nil {
		return netip.AddrPortFrom(a, 0), false, nil
	}
	return netip.AddrPort{}, false, fmt.Errorf("%w: %q", ErrSender, v)
}
