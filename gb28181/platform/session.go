package platform

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/gb28181/sdp"
	"github.com/vinfer/vinfer/source/gb28181"
)

// session is one INVITE dialog of a channel (GB/T 28181-2016 §9.2.2: live view).
type session struct {
	dlg        *sipgo.DialogClientSession
	callID     string
	gen        uint64 // the device generation it was made for
	started    time.Time
	packets    uint64 // the receiver's packet count when last seen changing
	lastPacket time.Time
	ended      string // why the device ended it; "" while it holds
	byDevice   bool   // the device sent BYE: nothing to send back
}

// errInviteAborted is returned by invite when the device registered again (elsewhere, or
// restarted) or the stream was closed while the INVITE waited for its answer.
var errInviteAborted = errors.New("INVITE aborted: the device registered again or the stream closed")

// invite sends the INVITE with vinfer's SDP offer, waits for the 2xx (at most InviteTimeout;
// less when the device registers again meanwhile, see abortStale), sends the ACK and makes
// the session current. An INVITE given up is never left to sipgo's Timer B: its transaction is
// ended at once, with a CANCEL when the device had answered provisionally (RFC 3261 §9.1).
func (c *Channel) invite(addr, transport string, gen uint64) error {
	s := c.srv
	ctx, cancel := context.WithTimeout(c.ctx, time.Duration(s.Config.InviteTimeout))
	defer cancel()
	aborted := make(chan struct{})
	c.mu.Lock()
	c.state = StateInviting
	c.invites++
	pending := &pendingInvite{gen: gen, abort: sync.OnceFunc(func() { close(aborted) })}
	c.pending = pending
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.pending = nil
		c.mu.Unlock()
	}()
	s.Counters.Invites.Add(1)
	port := c.port
	if c.ch.Transport == gb28181.TransportTCPActive {
		port = 9 // RFC 4145 §4.1: the active side's port is not used
	}
	offer := sdp.Offer{Origin: s.Config.ID, IP: s.mediaIP(addr), Port: port, Transport: c.ch.Transport, SSRC: c.ssrc.String()}
	req := s.newRequest(sip.INVITE, addr, transport, c.ch.ChannelID)
	req.AppendHeader(sip.NewHeader("Content-Type", "APPLICATION/SDP"))
	// Subject: media sender ID:sender stream serial, receiver ID:receiver serial (§9.2.2.1)
	req.AppendHeader(sip.NewHeader("Subject", fmt.Sprintf("%s:%s,%s:0", c.ch.ChannelID, c.ssrc.String(), s.Config.ID)))
	req.SetBody(offer.Marshal())
	c.log.Info("INVITE", "media", fmt.Sprintf("%s:%d", offer.IP, port), "transport", c.ch.Transport, "to", addr)
	dlg, err := s.dialogUA.WriteInvite(ctx, req)
	if err != nil {
		return fmt.Errorf("INVITE not sent: %w", err)
	}
	// WaitAnswer, cancelled, would wait for a provisional answer up to Timer B: force it out.
	wait, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	go func() {
		select {
		case <-ctx.Done():
		case <-aborted:
		case <-wait.Done():
			return
		}
		stop(sipgo.WaitAnswerForceCancelErr)
	}()
	err = dlg.WaitAnswer(wait, sipgo.AnswerOptions{OnResponse: func(r *sip.Response) error {
		if r.IsProvisional() {
			pending.provisional.Store(true)
		}
		return nil
	}})
	if err != nil {
		if pending.provisional.Load() && context.Cause(wait) == sipgo.WaitAnswerForceCancelErr {
			c.cancelInvite(req)
		}
		dlg.Close()
		select {
		case <-aborted:
			return errInviteAborted
		default:
		}
		if c.ctx.Err() != nil {
			return errInviteAborted
		}
		return fmt.Errorf("INVITE not answered: %w", err)
	}
	sess := &session{dlg: dlg, callID: string(*req.CallID()), gen: gen, started: time.Now(), lastPacket: time.Now()}
	if err := dlg.Ack(ctx); err != nil {
		dlg.Close()
		return fmt.Errorf("ACK not sent: %w", err)
	}
	ans, err := sdp.ParseAnswer(dlg.InviteResponse.Body())
	if err != nil {
		c.bye(sess, "unusable answer")
		return fmt.Errorf("answer: %w", err)
	}
	if ans.HasSSRC && ans.SSRC != uint32(c.ssrc) {
		s.Counters.SSRCMismatch.Add(1)
		c.log.Warn("the device answered another SSRC than offered; accepted, the port is this stream's", "answer_ssrc", sdp.SSRC(ans.SSRC).String())
	}
	if c.ch.Transport == gb28181.TransportTCPActive {
		if !ans.TCP || ans.Port == 0 || ans.Port == 9 {
			c.bye(sess, "no TCP address to connect to")
			return fmt.Errorf("answer has no TCP address to connect to (m= %d, tcp %v)", ans.Port, ans.TCP)
		}
		m, err := c.newMedia("", netip.AddrPortFrom(ans.IP, uint16(ans.Port)).String())
		if err != nil {
			c.bye(sess, "receiver failed")
			return err
		}
		c.setMedia(m)
	}
	c.mu.Lock()
	if c.media != nil {
		sess.packets = c.media.Stats().Packets
	}
	c.sess, c.state, c.lastErr = sess, StatePlaying, ""
	c.mu.Unlock()
	c.log.Info("session established", "call_id", sess.callID, "answer", fmt.Sprintf("%s:%d", ans.IP, ans.Port))
	return nil
}

// pendingInvite is the INVITE a channel waits on.
type pendingInvite struct {
	gen         uint64 // the device generation it was sent to
	abort       func()
	provisional atomic.Bool // a 1xx came: a CANCEL is due when it is given up
}

// cancelInvite sends CANCEL for a pending INVITE (RFC 3261 §9.1), in the background, bounded
// like a BYE.
func (c *Channel) cancelInvite(invite *sip.Request) {
	req := sip.NewRequest(sip.CANCEL, invite.Recipient)
	req.AppendHeader(sip.HeaderClone(invite.Via()))
	req.AppendHeader(sip.HeaderClone(invite.From()))
	req.AppendHeader(sip.HeaderClone(invite.To()))
	req.AppendHeader(sip.HeaderClone(invite.CallID()))
	req.AppendHeader(&sip.CSeqHeader{SeqNo: invite.CSeq().SeqNo, MethodName: sip.CANCEL})
	req.AppendHeader(sip.NewHeader("Max-Forwards", "70"))
	req.SetDestination(invite.Destination())
	req.SetTransport(invite.Transport())
	c.srv.Counters.Cancels.Add(1)
	c.byes.Add(1)
	go func() {
		defer c.byes.Done()
		ctx, cancel := context.WithTimeout(c.byeCtx, time.Duration(c.srv.Config.InviteTimeout))
		defer cancel()
		if _, err := c.srv.cli.Do(ctx, req); err != nil {
			c.log.Debug("CANCEL not confirmed", "call_id", string(*invite.CallID()), "err", err)
		}
	}()
}

// bye ends a session (unless the device did), in the background, bounded by InviteTimeout
// and by Close (which waits byeGrace for the answers).
func (c *Channel) bye(sess *session, why string) {
	if sess.byDevice {
		sess.dlg.Close()
		return
	}
	c.srv.Counters.Byes.Add(1)
	c.byes.Add(1)
	go func() {
		defer c.byes.Done()
		ctx, cancel := context.WithTimeout(c.byeCtx, time.Duration(c.srv.Config.InviteTimeout))
		defer cancel()
		if err := sess.dlg.Bye(ctx); err != nil {
			c.log.Debug("BYE not confirmed", "call_id", sess.callID, "why", why, "err", err)
		}
	}()
}
