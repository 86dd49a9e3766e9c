package send

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"

	"github.com/vinfer/vinfer/media"
)

// GBSender sends access units as GB28181 media (PS over RTP, see gbTarget) to one peer: what
// a lower platform answering an INVITE uses (gb28181/cascade). It is not safe for concurrent
// use.
type GBSender struct{ t *gbTarget }

// NewGBSender opens a sender: mode "udp" sends from a new local port to addr, "tcp" connects
// to addr (at the first key frame, again after a loss), "tcp-listen" accepts at addr (port 0:
// any; LocalPort tells). ssrc and pt go into every packet. Errors: a bad mode or address, a
// socket that cannot be opened.
func NewGBSender(ctx context.Context, mode, addr string, ssrc uint32, pt uint8, c media.Codec, log *slog.Logger) (*GBSender, error) {
	if log == nil {
		log = slog.Default()
	}
	q := url.Values{"transport": {mode}, "ssrc": {strconv.FormatUint(uint64(ssrc), 10)}, "pt": {strconv.Itoa(int(pt))}}
	u := &url.URL{Scheme: "gb28181", Host: addr, RawQuery: q.Encode()}
	t, err := newGBTarget(ctx, u, c, log)
	if err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	return &GBSender{t: t}, nil
}

// Write sends au (Annex-B). Errors are a UDP socket's; a lost TCP peer is redialled instead.
func (s *GBSender) Write(au *media.AccessUnit) error { return s.t.write(au) }

// LocalPort is the port media leaves from (udp) or is accepted on (tcp-listen); 0 for tcp
// before its connection.
func (s *GBSender) LocalPort() int {
	switch {
	case s.t.udp != nil:
		return s.t.udp.LocalAddr().(*net.UDPAddr).Port
	case s.t.ln != nil:
		return s.t.ln.Addr().(*net.TCPAddr).Port
	}
	return 0
}

// Close closes its sockets.
func (s *GBSender) Close() error { return s.t.close() }
