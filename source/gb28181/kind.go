package gb28181

import (
	"fmt"
	"log/slog"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/urlparam"
	"github.com/vinfer/vinfer/source/rtp"
)

// Kind receives GB28181 media:
// gb28181://[host]:port?transport=udp|tcp-passive|tcp-active[&remote=host:port][&ssrc=N|any][&pt=N]
// [&sender=IP[:port]|first|any] (rtp.ParseSender), or, in signalling mode (signal.go), a
// channel vinfer's own GB28181 platform invites: gb28181://<device id>/<channel id>[?transport=...].
var Kind = source.Kind{Schemes: []string{"gb28181"}, Open: openStream}

func openStream(s *config.Stream, _ source.Policy) (source.Source, error) {
	if IsSignalling(s.Source) {
		ch, err := ParseChannel(s.Source)
		if err != nil {
			return nil, err
		}
		sig := currentSignaller()
		if sig == nil {
			return nil, ErrNoSignalling
		}
		return sig.OpenChannel(s.ID, ch)
	}
	g, err := ParseURL(s.Source)
	if err != nil {
		return nil, err
	}
	g.Logger, g.Name = slog.Default().With("stream", s.ID), s.ID
	if g.SSRC != 0 {
		g.Logger = g.Logger.With("ssrc", fmt.Sprintf("%010d", g.SSRC)) // as GB/T 28181-2016 Annex F writes it
	}
	if err := g.Init(); err != nil {
		return nil, err
	}
	return g, nil
}

// ParseURL returns the Source a gb28181:// URL describes, not yet initialized.
func ParseURL(raw string) (*Source, error) {
	u, q, err := urlparam.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("gb28181: %w", err)
	}
	g := &Source{ListenAddr: u.Host,
		Transport:  q.OneOf("transport", TransportUDP, TransportUDP, TransportTCPPassive, TransportTCPActive),
		RemoteAddr: q.String("remote"),
	}
	if q.Peek("ssrc") == "any" {
		q.String("ssrc")
	} else {
		g.SSRC = uint32(q.Uint("ssrc", 1<<32-1, 0))
	}
	if g.Sender, g.LockAddr, err = rtp.ParseSender(q.String("sender")); err != nil {
		return nil, fmt.Errorf("gb28181: %w", err)
	}
	g.PayloadType = uint8(q.Uint("pt", 127, uint64(g.PayloadType)))
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("gb28181: %w", err)
	}
	return g, nil
}
