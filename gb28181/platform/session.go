package platform

import (
	"context"
	"fmt"
	"net/netip"
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

// invite sends the INVITE with vinfer's SDP offer, waits for the 2xx, sends the ACK and
// makes the session current.
func (c *Channel) invite(addr, transport string, gen uint64) error {
	s := c.srv
	c.mu.Lock()
	c.state = StateInviting
	c.invites++
	c.mu.Unlock()
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
	ctx, cancel := context.WithTimeout(c.ctx, time.Duration(s.Config.InviteTimeout))
	defer cancel()
	c.log.Info("INVITE", "media", fmt.Sprintf("%s:%d", offer.IP, port), "transport", c.ch.Transport, "to", addr)
	dlg, err := s.dialogUA.WriteInvite(ctx, req)
	if err != nil {
		return fmt.Errorf("INVITE not sent: %w", err)
	}
	if err := dlg.WaitAnswer(ctx, sipgo.AnswerOptions{}); err != nil {
		dlg.Close()
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

// bye ends a session (unless the device did), in the background, bounded by InviteTimeout;
// Close waits for it.
func (c *Channel) bye(sess *session, why string) {
	if sess.byDevice {
		sess.dlg.Close()
		return
	}
	c.srv.Counters.Byes.Add(1)
	c.byes.Add(1)
	go func() {
		defer c.byes.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.srv.Config.InviteTimeout))
		defer cancel()
		if err := sess.dlg.Bye(ctx); err != nil {
			c.log.Debug("BYE not confirmed", "call_id", sess.callID, "why", why, "err", err)
		}
	}()
}
