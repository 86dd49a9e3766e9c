package send

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// DefaultSSRC is the SSRC gb28181:// destinations use without ssrc= (the one
// configs/mixed.yaml's GB28181 stream expects).
const DefaultSSRC = 100000001

// gbTarget sends GB28181 media, gb28181://host:port[?transport=udp|tcp|tcp-listen][&ssrc=N]
// [&pt=96]: each access unit as an MPEG-2 program stream (GB/T 28181-2016 Annex C, ps.Muxer)
// cut into RTP packets of at most payloadMax bytes, one timestamp (90 kHz, from the DTS) per
// frame, the marker on its last packet. udp sends datagrams to host:port; tcp dials host:port
// (a platform's tcp-passive port) and tcp-listen accepts at host:port (for a platform in
// tcp-active mode), each packet with the RFC 4571 two-byte length. A TCP peer that goes away
// is redialled (or awaited) with backoff; sending resumes at the next key frame.
type gbTarget struct {
	ctx   context.Context
	mode  string
	addr  string
	mux   ps.Muxer
	pkt   pionrtp.Packet
	frame []byte
	buf   []byte
	log   *slog.Logger

	udp *net.UDPConn
	ln  net.Listener

	mu      sync.Mutex
	tcp     net.Conn // the current TCP peer; nil while there is none
	fresh   bool     // tcp was just set: wait for a key frame
	retryAt time.Time
	backoff time.Duration
}

func newGBTarget(ctx context.Context, u *url.URL, c media.Codec, log *slog.Logger) (*gbTarget, error) {
	pt, err := query(u, "pt", 96, 7)
	if err != nil {
		return nil, err
	}
	ssrc, err := query(u, "ssrc", DefaultSSRC, 32)
	if err != nil {
		return nil, err
	}
	t := &gbTarget{ctx: ctx, addr: u.Host, mode: u.Query().Get("transport"), mux: ps.Muxer{Codec: c}, log: log}
	t.pkt.Header = pionrtp.Header{Version: 2, PayloadType: uint8(pt), SSRC: uint32(ssrc), SequenceNumber: uint16(random32())}
	switch t.mode {
	case "", "udp":
		t.mode = "udp"
		ra, err := net.ResolveUDPAddr("udp", t.addr)
		if err != nil {
			return nil, err
		}
		if t.udp, err = net.DialUDP("udp", nil, ra); err != nil {
			return nil, err
		}
	case "tcp":
	case "tcp-listen":
		if t.ln, err = net.Listen("tcp", t.addr); err != nil {
			return nil, err
		}
		go t.accept()
	default:
		return nil, fmt.Errorf("gb28181: transport=%q: use udp, tcp or tcp-listen", t.mode)
	}
	return t, nil
}

// accept takes each platform connection in turn (tcp-listen); a new one replaces the old.
func (t *gbTarget) accept() {
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("accept failed", "err", err)
			select { // a transient failure (out of descriptors): try again shortly
			case <-t.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		t.log.Info("platform connected", "remote", conn.RemoteAddr().String())
		t.mu.Lock()
		if t.tcp != nil {
			t.tcp.Close()
		}
		t.tcp, t.fresh = conn, true
		t.mu.Unlock()
	}
}

// conn returns the TCP peer to write au to, dialling when due; nil: skip au.
func (t *gbTarget) conn(au *media.AccessUnit) net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tcp == nil && t.mode == "tcp" && au.Key && !time.Now().Before(t.retryAt) {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(t.ctx, "tcp", t.addr)
		if err != nil {
			t.backoff = min(max(2*t.backoff, minRetry), maxRetry)
			t.retryAt = time.Now().Add(t.backoff)
			t.log.Warn("connecting failed; retrying", "to", t.addr, "err", err, "in", t.backoff)
			return nil
		}
		t.log.Info("connected", "to", t.addr)
		t.tcp, t.fresh, t.backoff = c, true, 0
	}
	if t.tcp == nil || t.fresh && !au.Key {
		return nil
	}
	t.fresh = false
	return t.tcp
}

func (t *gbTarget) dropConn(c net.Conn, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tcp == c {
		t.log.Warn("connection lost", "err", err)
		c.Close()
		t.tcp = nil
		t.retryAt = time.Now().Add(minRetry)
	}
}

func (t *gbTarget) write(au *media.AccessUnit) error {
	var tcp net.Conn
	if t.mode != "udp" {
		if tcp = t.conn(au); tcp == nil {
			return nil
		}
		tcp.SetWriteDeadline(time.Now().Add(5 * time.Second))
	}
	// PS timestamps are 33-bit and must not be negative: the file's clock starts at 1 s.
	pts, dts := int64(ticks90k(au.PTS+time.Second)), int64(ticks90k(au.DTS+time.Second))
	t.frame = t.mux.Frame(t.frame[:0], au.Data, pts, dts, au.Key)
	t.pkt.Timestamp = uint32(dts)
	for b := t.frame; len(b) > 0; {
		n := min(len(b), payloadMax)
		t.pkt.Marker, t.pkt.Payload = n == len(b), b[:n]
		b = b[n:]
		if err := marshal(&t.pkt, &t.buf); err != nil {
			return err
		}
		t.pkt.SequenceNumber++
		if tcp == nil {
			if _, err := t.udp.Write(t.buf); err != nil && !isRefused(err) {
				return fmt.Errorf("gb28181: %w", err)
			}
			continue
		}
		var hdr [2]byte
		binary.BigEndian.PutUint16(hdr[:], uint16(len(t.buf)))
		if _, err := (&net.Buffers{hdr[:], t.buf}).WriteTo(tcp); err != nil {
			t.dropConn(tcp, err)
			return nil
		}
	}
	return nil
}

func (t *gbTarget) close() error {
	if t.udp != nil {
		t.udp.Close()
	}
	if t.ln != nil {
		t.ln.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tcp != nil {
		t.tcp.Close()
	}
	return nil
}
