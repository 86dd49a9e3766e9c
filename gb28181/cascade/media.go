package cascade

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/gb28181/sdp"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/send"
)

// session is one INVITEd live view: the channel's access units, as they come from its stream,
// sent as PS over RTP to the upper platform's media address (§9.2.2).
type session struct {
	callID  string
	channel string
	tap     *Tap
	snd     *send.GBSender
	ctx     context.Context
	cancel  context.CancelFunc
	acked   chan struct{}
	ackOnce sync.Once
	done    chan struct{}
	play    *playback // nil: a live view
}

// stop ends the session; closing the sender unblocks a TCP write in progress.
func (s *session) stop() {
	s.cancel()
	s.snd.Close()
}

// onInvite answers a live-view INVITE of one of the platform's channels: the offer's address,
// transport (UDP; TCP with a=setup:passive: vinfer connects; a=setup:active: vinfer listens)
// and SSRC; media starts on the ACK.
func (u *Upstream) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if !u.allowed(req, tx) {
		return
	}
	chID := req.Recipient.User
	if _, ok := u.channels[chID]; !ok {
		if to := req.To(); to != nil {
			chID = to.Address.User
		}
	}
	ch, ok := u.channels[chID]
	if !ok {
		u.Counters.Forbidden.Add(1)
		u.log.Warn("GB28181 upstream: INVITE of a channel not configured for this platform", "channel", req.Recipient.User)
		u.respond(req, tx, 404, "Not Found", nil)
		return
	}
	callID := ""
	if h := req.CallID(); h != nil {
		callID = h.Value()
	}
	body := req.Body()
	offer, err := sdp.ParseAnswer(body)
	var play *playback
	if err == nil {
		play, err = playbackOf(body)
	}
	if err != nil || callID == "" || play != nil && u.c.Replay == nil {
		u.log.Warn("GB28181 upstream: INVITE refused: not a live view, playback or download vinfer can send", "channel", chID, "err", err)
		u.respond(req, tx, 488, "Not Acceptable Here", nil)
		return
	}
	codec := media.CodecUnknown
	if play == nil && !u.c.Online(ch.Stream) {
		u.log.Warn("GB28181 upstream: INVITE of a channel whose stream does not run", "channel", chID, "stream", ch.Stream)
		u.respond(req, tx, 480, "Temporarily Unavailable", nil)
		return
	}
	if play != nil {
		var ok bool
		if codec, ok = u.recordedCodec(ch.Stream, play); !ok {
			u.log.Warn("GB28181 upstream: playback of a range not recorded", "channel", chID, "stream", ch.Stream, "from", play.from, "to", play.to)
			u.respond(req, tx, 404, "Not Found", nil)
			return
		}
	}
	mode, transport := "udp", sdp.TransportUDP
	if offer.TCP {
		if offer.Setup == "active" { // the upper platform connects
			mode, transport = "tcp-listen", sdp.TransportTCPPassive
		} else {
			mode, transport = "tcp", sdp.TransportTCPActive
		}
	}
	dest := netip.AddrPortFrom(offer.IP, uint16(offer.Port)).String()
	if mode == "tcp-listen" {
		dest = net.JoinHostPort(u.localIP, "0")
	}
	if offer.Port == 0 && mode != "tcp-listen" || offer.IP.IsUnspecified() {
		u.respond(req, tx, 488, "Not Acceptable Here", nil)
		return
	}
	u.mu.Lock()
	busy := len(u.sessions) >= maxSessions || play != nil && u.playbacksLocked() >= maxPlaybacks
	u.mu.Unlock()
	if busy {
		u.respond(req, tx, 486, "Busy Here", nil)
		return
	}
	tap := u.c.taps[ch.Stream]
	ctx, cancel := context.WithCancel(u.ctx)
	ssrc := offer.SSRC
	if play == nil {
		codec = tap.Codec()
	}
	snd, err := send.NewGBSender(ctx, mode, dest, ssrc, 96, codec, u.log.With("channel", chID))
	if err != nil {
		cancel()
		u.log.Warn("GB28181 upstream: INVITE: media socket", "channel", chID, "err", err)
		u.respond(req, tx, 500, "Server Internal Error", nil)
		return
	}
	ip, err := netip.ParseAddr(u.localIP)
	if err != nil {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	port := snd.LocalPort()
	if mode == "tcp" {
		port = 9
	}
	ans := (&sdp.SendAnswer{Origin: chID, IP: ip, Port: port, Transport: transport, SSRC: ssrc}).Marshal()
	s := &session{callID: callID, channel: chID, tap: tap, snd: snd, ctx: ctx, cancel: cancel, acked: make(chan struct{}), done: make(chan struct{}), play: play}
	u.mu.Lock()
	old := u.sessions[callID]
	if old == nil && (len(u.sessions) >= maxSessions || play != nil && u.playbacksLocked() >= maxPlaybacks) {
		// INVITEs at once all passed the check above: the bound holds here, where it counts.
		u.mu.Unlock()
		cancel()
		snd.Close()
		u.respond(req, tx, 486, "Busy Here", nil)
		return
	}
	if old != nil { // a re-INVITE replaces the session
		old.stop()
	}
	u.sessions[callID] = s
	u.mu.Unlock()
	u.respond(req, tx, 200, "OK", ans, u.contact(), sip.NewHeader("Content-Type", "APPLICATION/SDP"))
	u.Counters.Invites.Add(1)
	if play != nil {
		u.Counters.Playbacks.Add(1)
		u.log.Info("GB28181 upstream: playback", "channel", chID, "stream", ch.Stream, "from", play.from, "to", play.to, "speed", play.speed,
			"download", play.download, "to", dest, "transport", transport, "ssrc", strconv.FormatUint(uint64(ssrc), 10))
	} else {
		u.log.Info("GB28181 upstream: live view", "channel", chID, "stream", ch.Stream, "to", dest, "transport", transport, "ssrc", strconv.FormatUint(uint64(ssrc), 10))
	}
	u.wg.Add(1)
	go func() { defer u.wg.Done(); u.serve(s, ch.Stream) }()
}

// serve waits for the ACK, then sends stream's live units (or its recording) until BYE or
// close.
func (u *Upstream) serve(s *session, stream string) {
	defer func() {
		s.snd.Close()
		u.mu.Lock()
		if u.sessions[s.callID] == s {
			delete(u.sessions, s.callID)
		}
		u.mu.Unlock()
		close(s.done)
	}()
	select {
	case <-s.acked:
	case <-s.ctx.Done():
		return
	case <-time.After(ackTimeout):
		u.log.Warn("GB28181 upstream: INVITE answered but never ACKed; session dropped", "channel", s.channel)
		return
	}
	if s.play != nil {
		u.replay(s, stream)
		return
	}
	f := s.tap.subscribe()
	defer func() { u.Counters.MediaDropped.Add(s.tap.unsubscribe(f)) }()
	for {
		select {
		case <-s.ctx.Done():
			return
		case au := <-f.ch:
			if err := s.snd.Write(au); err != nil {
				u.log.Warn("GB28181 upstream: media send failed; session ended", "channel", s.channel, "err", err)
				return
			}
		}
	}
}

func (u *Upstream) onAck(req *sip.Request, _ sip.ServerTransaction) {
	if h := req.CallID(); h != nil {
		u.mu.Lock()
		s := u.sessions[h.Value()]
		u.mu.Unlock()
		if s != nil {
			s.ackOnce.Do(func() { close(s.acked) })
		}
	}
}

// onBye ends a session (§9.2.2.3).
func (u *Upstream) onBye(req *sip.Request, tx sip.ServerTransaction) {
	if !u.allowed(req, tx) {
		return
	}
	var s *session
	if h := req.CallID(); h != nil {
		u.mu.Lock()
		s = u.sessions[h.Value()]
		delete(u.sessions, h.Value())
		u.mu.Unlock()
	}
	if s == nil {
		u.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	}
	s.stop()
	<-s.done
	u.Counters.Byes.Add(1)
	u.log.Info("GB28181 upstream: live view ended by BYE", "channel", s.channel)
	u.respond(req, tx, 200, "OK", nil)
}

// Sessions is the number of live views being sent.
func (u *Upstream) Sessions() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sessions)
}

// endSessions ends every live view (why is logged).
func (u *Upstream) endSessions(why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, s := range u.sessions {
		s.stop()
		delete(u.sessions, id)
		u.log.Info("GB28181 upstream: live view ended", "channel", s.channel, "why", why)
	}
}
