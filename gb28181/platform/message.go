package platform

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// onMessage handles MESSAGE requests carrying MANSCDP (GB/T 28181-2016 §9.3, §9.5, §A.2):
// Keepalive notifications, Catalog and DeviceInfo responses, MediaStatus and Alarm
// notifications (an alarm wakes the streams of its channel: alarm.go). A
// body that does not decode is answered 400 (413 when too large), a device that is not
// registered, or not at its registered address, 403, each counted; with message_auth, a
// MESSAGE without a valid digest is challenged like a REGISTER.
func (s *Server) onMessage(req *sip.Request, tx sip.ServerTransaction) {
	from := req.From()
	if from == nil || req.CallID() == nil {
		s.Counters.BadRequest.Add(1)
		s.respond(req, tx, 400, "Bad Request")
		return
	}
	id := from.Address.User
	if s.Config.MessageAuth {
		if password, ok := s.Config.DevicePassword(id); ok && password != "" && !s.authenticate(req, tx, id, password) {
			return
		}
	}
	m, err := manscdp.Decode(req.Body())
	if err != nil {
		s.Counters.BadXML.Add(1)
		s.Logger.Warn("MESSAGE body refused", "from", req.Source(), "err", err)
		if errors.Is(err, manscdp.ErrTooLarge) {
			s.respond(req, tx, 413, "Request Entity Too Large")
		} else {
			s.respond(req, tx, 400, "Bad Request")
		}
		return
	}
	now := time.Now()
	s.mu.Lock()
	d := s.devices[id]
	if d == nil || now.After(d.expires) {
		s.mu.Unlock()
		s.Counters.UnknownDevice.Add(1)
		s.Logger.Debug("MESSAGE from a device not registered", "device", id, "cmd", m.CmdType, "from", req.Source())
		s.respond(req, tx, 403, "Forbidden") // the device registers again
		return
	}
	if d.addr != req.Source() || d.transport != req.Transport() {
		addr := d.addr
		s.mu.Unlock()
		s.Counters.WrongSource.Add(1)
		s.limited.log("wrong_source", "MESSAGE refused: not from the device's registered address (spoofed, or the device moved without registering)",
			"device", id, "cmd", m.CmdType, "from", req.Source(), "transport", req.Transport(), "registered", addr)
		s.respond(req, tx, 403, "Forbidden") // a device that moved registers again
		return
	}
	d.lastSeen = now
	var alarmed []string
	back := !d.online
	if back {
		d.online = true
		d.gen++
		s.Logger.Info("device back online", "device", id)
	}
	switch m.CmdType {
	case manscdp.CmdKeepalive:
		s.Counters.Keepalives.Add(1)
	case manscdp.CmdCatalog:
		s.Counters.Catalogs.Add(1)
		d.catalogs++
		d.sumNum = m.SumNum
		for _, it := range m.DeviceList.Items {
			if _, ok := d.channels[it.DeviceID]; !ok && len(d.channels) >= MaxChannels {
				s.Counters.CatalogFull.Add(1)
				continue
			}
			d.channels[it.DeviceID] = it
		}
	case manscdp.CmdDeviceInfo:
		s.Counters.DeviceInfos.Add(1)
		d.info = *m
		d.info.DeviceList = manscdp.DeviceList{}
	case manscdp.CmdMediaStatus:
		s.Counters.MediaStatus.Add(1)
	case manscdp.CmdAlarm:
		alarmed = s.alarmedLocked(id, m)
	}
	s.mu.Unlock()
	if back {
		s.kick(id)
	}
	if m.CmdType == manscdp.CmdMediaStatus && m.NotifyType == manscdp.MediaStatusEnd {
		// the session its Call-ID names only; an unknown one is counted, answered 200 still
		s.endSession(string(*req.CallID()), req.Source(), req.Transport(), "media status: stream ended")
	}
	s.respond(req, tx, 200, "OK")
	if m.CmdType == manscdp.CmdAlarm {
		s.alarm(id, m, alarmed)
	}
}

// onBye handles a device ending a session: its channel invites again. Only the session's
// device, from its registered address and transport, may end it.
func (s *Server) onBye(req *sip.Request, tx sip.ServerTransaction) {
	callID := req.CallID()
	if callID == nil {
		s.Counters.BadRequest.Add(1)
		s.respond(req, tx, 400, "Bad Request")
		return
	}
	s.Counters.ByesReceived.Add(1)
	switch s.endSession(string(*callID), req.Source(), req.Transport(), "BYE from the device") {
	case errNoSession:
		s.respond(req, tx, 481, "Call/Transaction Does Not Exist")
	case errWrongSource:
		s.respond(req, tx, 403, "Forbidden")
	default:
		s.respond(req, tx, 200, "OK")
	}
}

// Refusals of endSession.
var (
	errNoSession   = errors.New("no session has this Call-ID")
	errWrongSource = errors.New("not from the session's device")
)

// endSession marks the session of Call-ID callID ended, when source and transport are its
// device's registered ones; refusals are counted (unknown_call_id, wrong_source).
func (s *Server) endSession(callID, source, transport, why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.channels {
		if !c.hasSession(callID) {
			continue
		}
		if d := s.devices[c.ch.DeviceID]; d == nil || d.addr != source || d.transport != transport {
			s.Counters.WrongSource.Add(1)
			s.limited.log("wrong_source", "session end refused: not from the session's device", "call_id", callID, "from", source, "transport", transport, "why", why)
			return errWrongSource
		}
		c.endSession(why)
		return nil
	}
	s.Counters.UnknownCallID.Add(1)
	s.limited.log("unknown_call_id", "session end naming no session ignored", "call_id", callID, "from", source, "why", why)
	return errNoSession
}

// query sends a MANSCDP query (Catalog, DeviceInfo; §9.5.3) to a device and waits for the 200
// (the answer comes as a MESSAGE of its own).
func (s *Server) query(id, cmd string) {
	addr, transport, _, online := s.deviceState(id)
	if !online {
		return
	}
	req := s.newRequest(sip.MESSAGE, addr, transport, id)
	req.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	req.SetBody(manscdp.Query(cmd, s.nextSN(), id))
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.Config.InviteTimeout))
	defer cancel()
	res, err := s.cli.Do(ctx, req)
	if err != nil {
		s.Logger.Warn("query not answered", "device", id, "cmd", cmd, "err", err)
		return
	}
	if res.StatusCode/100 != 2 {
		s.Logger.Warn("query refused", "device", id, "cmd", cmd, "status", res.StatusCode)
	}
}

// newRequest builds a request from the platform to user (a device or channel ID) at the
// device's address: the Request-URI names the address the device registered from (NAT), From
// is the platform, To the user in the platform's domain (GB/T 28181-2016 §9.2.2.1).
func (s *Server) newRequest(method sip.RequestMethod, addr, transport, user string) *sip.Request {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	req := sip.NewRequest(method, sip.Uri{Scheme: "sip", User: user, Host: host, Port: p})
	req.SetDestination(addr)
	req.SetTransport(transport)
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: s.Config.ID, Host: s.Config.Domain}}
	from.Params = sip.NewParams()
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: user, Host: s.Config.Domain}})
	return req
}
