package platform

import (
	"context"
	"fmt"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// maxAlarmAnswers bounds the alarm responses in flight; over it an alarm is handled but not
// answered with a Response (counted: alarm_answers_dropped).
const maxAlarmAnswers = 32

// alarmedLocked records an Alarm notification (GB/T 28181-2016 §9.4, §A.2.5.5) from device id
// on the streams it concerns and returns their IDs: those of the channel the notification
// names, or every stream of the device when it names the device itself. Called with s.mu held.
func (s *Server) alarmedLocked(id string, m *manscdp.Message) []string {
	what := fmt.Sprintf("%s priority %s method %s", m.AlarmTime, m.AlarmPriority, m.AlarmMethod)
	if m.AlarmDescription != "" {
		what += ": " + m.AlarmDescription
	}
	if len(what) > 256 {
		what = what[:256]
	}
	var ids []string
	for c := range s.channels {
		if c.ch.DeviceID != id || (m.DeviceID != id && c.ch.ChannelID != m.DeviceID) {
			continue
		}
		c.mu.Lock()
		c.alarms++
		c.lastAlarm = what
		c.mu.Unlock()
		ids = append(ids, c.id)
	}
	return ids
}

// alarm wakes the streams an Alarm notification concerns (Waker), counting them, hands it to
// Forward with them, and answers
// the device with an Alarm Response (§9.4.2) after its 200.
func (s *Server) alarm(id string, m *manscdp.Message, streams []string) {
	s.Counters.Alarms.Add(1)
	if len(streams) == 0 {
		s.Counters.AlarmUnmatched.Add(1)
		s.limited.log("alarm_unmatched", "alarm for a channel no stream plays", "device", id, "channel", m.DeviceID)
	} else if s.Forward != nil {
		s.Forward(streams, m)
	}
	for _, st := range streams {
		if s.Waker == nil {
			s.Counters.AlarmNotWoken.Add(1)
			continue
		}
		if err := s.Waker.WakeStream(st); err != nil {
			s.Counters.AlarmNotWoken.Add(1)
			s.limited.log("alarm_not_woken", "alarm did not wake the stream", "device", id, "channel", m.DeviceID, "stream", st, "err", err)
			continue
		}
		s.Counters.AlarmWakes.Add(1)
		if n, ok := s.limited.allow("alarm_wake " + st); ok { // a device's alarm storm cannot flood the log
			s.Logger.Info("alarm wakes the stream", "device", id, "channel", m.DeviceID, "stream", st,
				"priority", m.AlarmPriority, "method", m.AlarmMethod, "unlogged_since_last", n)
		}
	}
	if s.alarmAnswers.Add(1) > maxAlarmAnswers {
		s.alarmAnswers.Add(-1)
		s.Counters.AlarmAnswersDropped.Add(1)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.alarmAnswers.Add(-1)
		s.answerAlarm(id, m)
	}()
}

// answerAlarm sends the Alarm Response to the device and waits for its 200.
func (s *Server) answerAlarm(id string, m *manscdp.Message) {
	addr, transport, _, online := s.deviceState(id)
	if !online {
		return
	}
	req := s.newRequest(sip.MESSAGE, addr, transport, id)
	req.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	req.SetBody(manscdp.AlarmResponse(m.SN, m.DeviceID))
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.Config.InviteTimeout))
	defer cancel()
	if _, err := s.cli.Do(ctx, req); err != nil {
		s.Logger.Debug("alarm response not answered", "device", id, "err", err)
	}
}
