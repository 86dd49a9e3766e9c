package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/vinfer/vinfer/gb28181/sdp"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/live"
)

// Channel states (defs.GB28181Stream.State).
const (
	StateWaiting  = "waiting"  // the device is offline or never registered
	StateInviting = "inviting" // an INVITE is in flight
	StatePlaying  = "playing"  // the session is established (ACK sent)
	StateRetrying = "retrying" // the last INVITE failed; the next one after a backoff
)

// tick is how often a channel checks its session (media flowing, device state).
const tick = 250 * time.Millisecond

// retry are the waits after failed INVITEs.
var retry = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}

// Channel is a signalling-mode stream's source: it INVITEs the channel while its device is
// online, receives the media on its own port (UDP, TCP passive) or connection (TCP active),
// and keeps exactly one session: a new INVITE after media stops for Config.MediaTimeout, after
// the device registers again (restart) or ends the session, BYE when closed.
type Channel struct {
	srv  *Server
	id   string
	ch   gb28181.Channel
	ssrc sdp.SSRC
	port int // 0 for TransportTCPActive
	log  *slog.Logger

	mu      sync.Mutex
	media   *gb28181.Source
	changed chan struct{} // closed when media is replaced
	sess    *session
	state   string
	lastErr string
	invites uint64
	// alarms counts the Alarm notifications naming the channel; lastAlarm is the last one.
	alarms    uint64
	lastAlarm string
	closed    bool
	pending   *pendingInvite // the INVITE waiting for its answer

	wakeC  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	byes   sync.WaitGroup // BYEs and CANCELs in flight
	byeCtx context.Context
	// byeStop ends the BYEs and CANCELs still unanswered after byeGrace of Close.
	byeStop context.CancelFunc
	closer  sync.Once
}

// byeGrace is how long Close waits for the answers to its BYEs and CANCELs (at most
// InviteTimeout): a dead device delays a stop by no more.
const byeGrace = 2 * time.Second

var _ source.Source = (*Channel)(nil)

func (s *Server) newChannel(streamID string, ch gb28181.Channel) (*Channel, error) {
	ssrc, err := s.ssrcs.Live()
	if err != nil {
		return nil, err
	}
	c := &Channel{srv: s, id: streamID, ch: ch, ssrc: ssrc, state: StateWaiting, changed: make(chan struct{}),
		wakeC: make(chan struct{}, 1), done: make(chan struct{}),
		log: s.Logger.With("stream", streamID, "device", ch.DeviceID, "channel", ch.ChannelID, "ssrc", ssrc.String())}
	if ch.Transport != gb28181.TransportTCPActive {
		if err := c.openPort(); err != nil {
			s.ssrcs.Release(ssrc)
			return nil, err
		}
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	c.byeCtx, c.byeStop = context.WithCancel(context.Background())
	s.mu.Lock()
	s.channels[c] = true
	s.mu.Unlock()
	go c.run()
	return c, nil
}

// openPort takes a port of the range and opens the receiver there (a port another program
// holds is skipped).
func (c *Channel) openPort() error {
	var last error
	for range 16 {
		port, err := c.srv.ports.get()
		if err != nil {
			return err
		}
		m, err := c.newMedia(net.JoinHostPort(c.srv.bindHost, strconv.Itoa(port)), "")
		if err != nil {
			c.srv.ports.put(port)
			last = err
			continue
		}
		c.port, c.media = port, m
		return nil
	}
	return fmt.Errorf("gb28181: no usable media port: %w", last)
}

// newMedia opens a receiver. Any SSRC is accepted on the stream's own port: a device that
// answers or sends with another SSRC than offered (firmware, restarts) still plays.
func (c *Channel) newMedia(listen, remote string) (*gb28181.Source, error) {
	m := &gb28181.Source{Transport: c.ch.Transport, ListenAddr: listen, RemoteAddr: remote, RTCPAddr: "none", Logger: c.log}
	if err := m.Init(); err != nil {
		return nil, err
	}
	return m, nil
}

func (c *Channel) wake() {
	select {
	case c.wakeC <- struct{}{}:
	default:
	}
}

// run keeps the session: invite while the device is online, end stale sessions.
func (c *Channel) run() {
	defer close(c.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	var next time.Time
	failures := 0
	for {
		select {
		case <-c.ctx.Done():
			c.mu.Lock()
			sess := c.sess
			c.sess = nil
			c.mu.Unlock()
			if sess != nil {
				c.bye(sess, "stream removed")
			}
			return
		case <-c.wakeC:
		case <-t.C:
		}
		now := time.Now()
		addr, transport, gen, online := c.srv.deviceState(c.ch.DeviceID)
		c.mu.Lock()
		sess := c.sess
		why := ""
		if sess != nil {
			switch {
			case !online:
				why = "device offline"
			case sess.gen != gen:
				why = "device registered again"
			case sess.ended != "":
				why = sess.ended
			case c.stalled(sess, now):
				why = "no media for media_timeout"
				c.srv.Counters.MediaTimeouts.Add(1)
			}
			if why != "" {
				c.sess = nil
			}
		}
		if !online {
			c.state = StateWaiting
		}
		c.mu.Unlock()
		if why != "" {
			c.log.Warn("session ended, inviting again when the device is online", "why", why, "call_id", sess.callID)
			c.bye(sess, why)
			if c.ch.Transport == gb28181.TransportTCPActive {
				c.setMedia(nil) // stop dialling the old session's address
			}
			next = now
		}
		if !online || sess != nil && why == "" || now.Before(next) {
			continue
		}
		err := c.invite(addr, transport, gen)
		if errors.Is(err, errInviteAborted) {
			c.log.Info("INVITE given up: the device registered again", "to", addr)
			next = time.Time{} // at once, to where the device is now
			continue
		}
		if err != nil {
			c.srv.Counters.InviteFailures.Add(1)
			wait := retry[min(failures, len(retry)-1)]
			failures++
			next = time.Now().Add(wait)
			c.mu.Lock()
			c.state, c.lastErr = StateRetrying, err.Error()
			c.mu.Unlock()
			c.log.Warn("INVITE failed", "err", err, "retry_in", wait)
			continue
		}
		failures = 0
	}
}

// abortStale gives up the INVITE waiting for its answer when it was sent to another
// generation of the device (registered again, from elsewhere or restarted) or the device is
// offline. Called with the server's mutex held.
func (c *Channel) abortStale(gen uint64, online bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != nil && (c.pending.gen != gen || !online) {
		c.pending.abort()
	}
}

// stalled reports a session without a new RTP packet for MediaTimeout. c.mu is held.
func (c *Channel) stalled(sess *session, now time.Time) bool {
	if c.media == nil {
		return false
	}
	if p := c.media.Stats().Packets; p != sess.packets {
		sess.packets, sess.lastPacket = p, now
	}
	return now.Sub(sess.lastPacket) > time.Duration(c.srv.Config.MediaTimeout)
}

// hasSession reports whether the current session's Call-ID is callID.
func (c *Channel) hasSession(callID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil && c.sess.callID == callID
}

// endSession marks the current session ended (the device sent BYE, MediaStatus 121). Called
// with the server's mutex held.
func (c *Channel) endSession(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return
	}
	c.sess.ended = why
	if why == "BYE from the device" {
		c.sess.byDevice = true
	}
	c.wake()
}

// setMedia replaces the receiver (TransportTCPActive: one per session); Read moves over.
func (c *Channel) setMedia(m *gb28181.Source) {
	c.mu.Lock()
	old := c.media
	c.media = m
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// Read returns the next access unit of whichever session is current; it blocks while there
// is none.
func (c *Channel) Read(ctx context.Context) (*media.AccessUnit, error) {
	for {
		c.mu.Lock()
		m, changed, closed := c.media, c.changed, c.closed
		c.mu.Unlock()
		if closed {
			return nil, live.ErrClosed
		}
		if m != nil {
			au, err := m.Read(ctx)
			if !errors.Is(err, live.ErrClosed) {
				return au, err
			}
			c.mu.Lock()
			replaced := c.media != m
			c.mu.Unlock()
			if replaced {
				continue
			}
		}
		select {
		case <-changed:
		case <-c.done:
			return nil, live.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Info describes the current session's stream.
func (c *Channel) Info() media.StreamInfo {
	c.mu.Lock()
	m := c.media
	c.mu.Unlock()
	if m == nil {
		return media.StreamInfo{}
	}
	return m.Info()
}

// Live reports true.
func (c *Channel) Live() bool { return true }

// Stats returns the receiver's counters.
func (c *Channel) Stats() live.Stats {
	c.mu.Lock()
	m := c.media
	c.mu.Unlock()
	if m == nil {
		return live.Stats{State: live.StateConnecting, Reason: "waiting for device " + c.ch.DeviceID}
	}
	return m.Stats()
}

// SSRC is the SSRC offered in the INVITEs.
func (c *Channel) SSRC() sdp.SSRC { return c.ssrc }

// Port is the media port (0 for TransportTCPActive).
func (c *Channel) Port() int { return c.port }

// State returns the session state and the current Call-ID.
func (c *Channel) State() (state, callID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		callID = c.sess.callID
	}
	return c.state, callID
}

func (c *Channel) snapshot() defs.GB28181Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := defs.GB28181Stream{ID: c.id, State: c.state, Transport: c.ch.Transport, SSRC: c.ssrc.String(), Port: c.port,
		Invites: c.invites, LastError: c.lastErr, Alarms: c.alarms, LastAlarm: c.lastAlarm}
	if c.sess != nil {
		st.CallID = c.sess.callID
	}
	return st
}

// Close ends the session (BYE; a pending INVITE is given up, with CANCEL when answered
// provisionally) waiting at most byeGrace for the answers, closes the receiver and returns the
// port and SSRC.
func (c *Channel) Close() error {
	c.closer.Do(func() {
		c.cancel()
		<-c.done
		grace := min(byeGrace, time.Duration(c.srv.Config.InviteTimeout))
		answered := make(chan struct{})
		go func() { c.byes.Wait(); close(answered) }()
		t := time.NewTimer(grace)
		select {
		case <-answered:
		case <-t.C:
			c.log.Info("BYE or CANCEL not answered within the grace, given up", "grace", grace)
		}
		t.Stop()
		c.byeStop()
		<-answered
		c.mu.Lock()
		c.closed = true
		m := c.media
		c.mu.Unlock()
		if m != nil {
			m.Close()
		}
		if c.port != 0 {
			c.srv.ports.put(c.port)
		}
		c.srv.ssrcs.Release(c.ssrc)
		c.srv.mu.Lock()
		delete(c.srv.channels, c)
		c.srv.mu.Unlock()
	})
	return nil
}
