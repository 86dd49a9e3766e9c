package gb28181

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtp"
)

// accept serves TransportTCPPassive: each camera connection replaces the previous one.
func (s *Source) accept(ctx context.Context) {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.Logger.Warn("accept failed", "err", err)
			if live.Sleep(ctx, 100*time.Millisecond) != nil {
				return
			}
			continue
		}
		gen, ok := s.startConn(ctx, conn)
		if !ok {
			conn.Close()
			return
		}
		s.Logger.Info("camera connected", "remote", conn.RemoteAddr().String())
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := s.readConn(ctx, conn, gen)
			s.Logger.Info("camera connection ended", "err", err)
		}()
	}
}

// dial serves TransportTCPActive: connect, read until the connection fails, wait, again.
func (s *Source) dial(ctx context.Context) {
	defer s.wg.Done()
	backoff := live.Backoff{Steps: s.Backoff}
	d := net.Dialer{Timeout: 5 * time.Second}
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", s.RemoteAddr)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.stats.ConnectFailures.Add(1)
			wait := backoff.Next()
			s.Logger.Warn("connecting to the camera failed", "remote", s.RemoteAddr, "err", err, "retry_in", wait)
			if live.Sleep(ctx, wait) != nil {
				return
			}
			continue
		}
		gen, ok := s.startConn(ctx, conn)
		if !ok {
			conn.Close()
			return
		}
		s.Logger.Info("connected to the camera", "remote", s.RemoteAddr)
		err = s.readConn(ctx, conn, gen)
		if ctx.Err() != nil {
			return
		}
		if s.alive.Load() {
			backoff.Reset()
		}
		wait := backoff.Next()
		s.Logger.Warn("camera connection ended, reconnecting", "err", err, "retry_in", wait)
		if live.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// startConn makes conn the current connection and tells run, which drops what older
// connections still queued.
func (s *Source) startConn(ctx context.Context, conn net.Conn) (uint64, bool) {
	gen := s.connGen.Add(1)
	s.connMu.Lock()
	old := s.conn
	s.conn = conn
	s.connMu.Unlock()
	if old != nil {
		old.Close()
	}
	select {
	case s.newConn <- gen:
	case <-ctx.Done():
		return 0, false
	}
	s.alive.Store(false)
	s.stats.Connects.Add(1)
	if gen > 1 {
		s.stats.Reconnects.Add(1)
	}
	return gen, true
}

func (s *Source) currentConn() net.Conn {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.conn
}

// closeConn closes the current connection; its reader ends.
func (s *Source) closeConn() {
	s.connMu.Lock()
	c := s.conn
	s.conn = nil
	s.connMu.Unlock()
	if c != nil {
		c.Close()
	}
}

// readConn reads RFC 4571 frames from conn and queues them for run, until the connection ends.
func (s *Source) readConn(ctx context.Context, conn net.Conn, gen uint64) error {
	defer func() {
		s.connMu.Lock()
		if s.conn == conn {
			s.conn = nil
		}
		s.connMu.Unlock()
		conn.Close()
	}()
	fr := rtp.NewFrameReader(conn)
	for {
		// a silent connection is ended by run's watchdog; this only bounds a dead peer
		_ = conn.SetReadDeadline(time.Now().Add(2 * s.recv.Watchdog))
		b, err := fr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		d := s.pool.Wait(ctx.Done())
		if d == nil {
			return ctx.Err()
		}
		d.SetBytes(b)
		d.From, d.At, d.RTCP = netip.AddrPort{}, time.Now(), udpmux.IsRTCP(b)
		select {
		case s.tcpIn <- tcpPacket{d, gen}:
		case <-ctx.Done():
			s.pool.Put(d)
			return ctx.Err()
		}
	}
}
