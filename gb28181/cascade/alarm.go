package cascade

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// alarmOf maps an event to its video alarm type (GB/T 28181-2016 §A.2.5.4) and the
// intrusion's event type; ok false for events that raise no alarm.
func alarmOf(t event.Type) (typ, eventType int, ok bool) {
	switch t {
	case event.LineCross:
		return manscdp.AlarmTypeTripwire, 0, true
	case event.ZoneEnter:
		return manscdp.AlarmTypeIntrusion, manscdp.IntrusionEventEnter, true
	case event.ZoneLoiter:
		return manscdp.AlarmTypeLoitering, 0, true
	}
	return 0, 0, false
}

// describe is an alarm's AlarmDescription: what crossed or entered what, and the snapshot's
// URL when evidence recorded one, e.g. "line.cross line=exit direction=in class=person
// track=3 snapshot=http://…/snapshot.jpg".
func describe(ev *event.Event) string {
	var b strings.Builder
	b.WriteString(ev.Type.String())
	if ev.Line != "" {
		fmt.Fprintf(&b, " line=%s", ev.Line)
		if d := ev.Direction.String(); d != "" {
			fmt.Fprintf(&b, " direction=%s", d)
		}
	}
	if ev.Zone != "" {
		fmt.Fprintf(&b, " zone=%s", ev.Zone)
	}
	if ev.Label != "" {
		fmt.Fprintf(&b, " class=%s", ev.Label)
	} else {
		fmt.Fprintf(&b, " class=%d", ev.ClassID)
	}
	fmt.Fprintf(&b, " track=%d", ev.TrackID)
	if ev.Dwell > 0 {
		fmt.Fprintf(&b, " dwell=%.1fs", ev.Dwell.Seconds())
	}
	if e := ev.Evidence; e != nil && e.Snapshot {
		fmt.Fprintf(&b, " snapshot=%s%s", e.Base, event.SnapshotPath(ev.ID))
	}
	return b.String()
}

// pending is an alarm waiting to be sent to each channel of its stream (DeviceID filled in
// per channel).
type pending struct {
	stream string
	a      manscdp.Alarm
}

// alarm queues ev for this platform when one of its channels carries ev's stream.
func (u *Upstream) alarm(ev *event.Event) {
	typ, et, ok := alarmOf(ev.Type)
	if !ok {
		return
	}
	when := ev.Time
	if when.IsZero() {
		when = time.Now()
	}
	u.queue(pending{stream: ev.Stream, a: manscdp.Alarm{Priority: u.cfg.AlarmPriority, Method: manscdp.AlarmMethodVideo,
		Type: typ, EventType: et, Time: when, Description: describe(ev)}})
}

// carries reports whether one of this platform's channels carries stream.
func (u *Upstream) carries(stream string) bool {
	for _, ch := range u.cfg.Channels {
		if ch.Stream == stream {
			return true
		}
	}
	return false
}

// queue queues p when one of this platform's channels carries p's stream; a full queue drops
// it, counted.
func (u *Upstream) queue(p pending) {
	if !u.carries(p.stream) {
		return
	}
	select {
	case u.alarms <- p:
	default:
		u.Counters.AlarmsDropped.Add(1)
	}
}

// sendAlarms delivers queued alarms, one at a time, to each channel of the alarm's stream.
func (u *Upstream) sendAlarms() {
	for {
		select {
		case <-u.ctx.Done():
			return
		case p := <-u.alarms:
			for _, ch := range u.cfg.Channels {
				if ch.Stream != p.stream {
					continue
				}
				a := p.a
				a.DeviceID = ch.ID
				switch u.deliver(manscdp.AlarmNotify(u.sn.Add(1), a), a.Priority, a.Method) {
				case sent:
					u.Counters.AlarmsSent.Add(1)
				case failed:
					u.Counters.AlarmsDropped.Add(1)
				case filtered:
					u.Counters.AlarmsFiltered.Add(1)
				}
			}
		}
	}
}

// Outcomes of deliver.
const (
	sent     = iota // the upper platform accepted it
	failed          // not registered, refused or unanswered
	filtered        // no subscription's filter wants it
)

// deliver sends an alarm body of priority and method: by NOTIFY to each alarm subscription (§9.11)
// whose filter wants it when there are subscriptions, else by MESSAGE (§9.4).
func (u *Upstream) deliver(body []byte, priority, method int) int {
	if !u.registered.Load() {
		return failed
	}
	subs := u.activeSubs()
	if len(subs) == 0 {
		res, err := u.message(body)
		if err != nil || res.StatusCode != 200 {
			u.log.Warn("GB28181 upstream: alarm not accepted", "err", err, "status", status(res))
			return failed
		}
		return sent
	}
	out := filtered
	for _, s := range subs {
		if !s.filter.WantsAlarm(priority, method) {
			continue
		}
		res, err := u.notify(s, body)
		if err == nil && res.StatusCode == 200 {
			out = sent
			continue
		}
		if out == filtered {
			out = failed
		}
		u.log.Warn("GB28181 upstream: alarm NOTIFY not accepted", "err", err, "status", status(res))
		if err == nil && res.StatusCode == 481 { // the subscription is gone upstream
			u.mu.Lock()
			delete(u.subs, s.callID)
			u.mu.Unlock()
		}
	}
	return out
}

func status(res *sip.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}

// subscription is an alarm subscription's dialog (§9.11.1: SUBSCRIBE with a Query of
// CmdType Alarm).
type subscription struct {
	callID            string
	localTag, peerTag string
	remote            sip.Uri // the subscriber's Contact: NOTIFY's Request-URI
	event             string  // the Event header to echo
	expires           time.Time
	cseq              uint32
	filter            manscdp.Message // the SUBSCRIBE's priorities and methods
}

// activeSubs returns copies of the subscriptions not expired (a SUBSCRIBE may change them
// meanwhile), forgetting the expired ones.
func (u *Upstream) activeSubs() []subscription {
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []subscription
	for id, s := range u.subs {
		if now.After(s.expires) {
			delete(u.subs, id)
			continue
		}
		out = append(out, *s)
	}
	return out
}

// onSubscribe accepts an alarm subscription (Expires 0 ends it); other subscriptions are
// answered 489 Bad Event.
func (u *Upstream) onSubscribe(req *sip.Request, tx sip.ServerTransaction) {
	if !u.allowed(req, tx) {
		return
	}
	m, err := manscdp.Decode(req.Body())
	if err != nil || m.CmdType != manscdp.CmdAlarm {
		u.respond(req, tx, 489, "Bad Event", nil)
		return
	}
	if _, known := u.channels[m.DeviceID]; m.DeviceID != u.cfg.DeviceID && !known {
		u.Counters.Forbidden.Add(1)
		u.respond(req, tx, 404, "Not Found", nil)
		return
	}
	expires := 3600
	if h := req.GetHeader("Expires"); h != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Value())); err == nil && n >= 0 {
			expires = min(n, int(maxSubExpires/time.Second))
		}
	}
	callID, from := req.CallID(), req.From()
	if callID == nil || from == nil {
		u.respond(req, tx, 400, "Bad Request", nil)
		return
	}
	peerTag, _ := from.Params.Get("tag")
	remote := from.Address
	if c := req.Contact(); c != nil {
		remote = c.Address
	}
	ev := "presence"
	if h := req.GetHeader("Event"); h != nil {
		ev = h.Value()
	}
	u.mu.Lock()
	s := u.subs[callID.Value()]
	if s == nil && expires > 0 && len(u.subs) >= maxSubs {
		u.mu.Unlock()
		u.respond(req, tx, 486, "Busy Here", nil)
		return
	}
	if s == nil {
		s = &subscription{callID: callID.Value(), localTag: sip.GenerateTagN(16)}
	}
	s.peerTag, s.remote, s.event, s.filter = peerTag, remote, ev, *m
	s.expires = time.Now().Add(time.Duration(expires) * time.Second)
	if expires == 0 {
		delete(u.subs, s.callID)
	} else {
		u.subs[s.callID] = s
	}
	u.mu.Unlock()
	res := sip.NewResponseFromRequest(req, 200, "OK", manscdp.Response(manscdp.CmdAlarm, m.SN, m.DeviceID, "OK"))
	if to := res.To(); to != nil {
		to.Params.Remove("tag")
		to.Params.Add("tag", s.localTag)
	}
	exp := sip.ExpiresHeader(expires)
	res.AppendHeader(&exp)
	res.AppendHeader(u.contact())
	res.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	if err := tx.Respond(res); err != nil {
		u.log.Debug("response not sent", "err", err)
	}
	if expires > 0 {
		u.Counters.Subscriptions.Add(1)
		u.log.Info("GB28181 upstream: alarm subscription", "device", m.DeviceID, "expires", expires)
	}
}

// errSubGone: the subscription ended before its NOTIFY.
var errSubGone = errors.New("subscription ended")

// notify sends body in subscription sub's dialog.
func (u *Upstream) notify(sub subscription, body []byte) (*sip.Response, error) {
	u.mu.Lock()
	live := u.subs[sub.callID]
	if live == nil {
		u.mu.Unlock()
		return nil, errSubGone
	}
	live.cseq++
	s := *live // the dialog as it is now
	u.mu.Unlock()
	cseq, left := s.cseq, int(time.Until(s.expires)/time.Second)
	req := sip.NewRequest(sip.NOTIFY, s.remote)
	req.SetDestination(u.cfg.Address)
	req.SetTransport(u.transport)
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: u.domain}, Params: sip.NewParams()}
	from.Params.Add("tag", s.localTag)
	req.AppendHeader(from)
	to := &sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.ServerID, Host: u.cfg.Domain}, Params: sip.NewParams()}
	if s.peerTag != "" {
		to.Params.Add("tag", s.peerTag)
	}
	req.AppendHeader(to)
	cid := sip.CallIDHeader(s.callID)
	req.AppendHeader(&cid)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: cseq, MethodName: sip.NOTIFY})
	req.AppendHeader(sip.NewHeader("Event", s.event))
	req.AppendHeader(sip.NewHeader("Subscription-State", "active;expires="+strconv.Itoa(max(left, 0))))
	req.AppendHeader(u.contact())
	req.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	req.SetBody(body)
	ctx, cancel := context.WithTimeout(u.ctx, requestTimeout)
	defer cancel()
	return u.cli.Do(ctx, req)
}
