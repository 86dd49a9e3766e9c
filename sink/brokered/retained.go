package brokered

import (
	"errors"
	"time"

	"github.com/vinfer/vinfer/event"
)

// ErrTopic is returned by Retain for a topic that is not 1–255 bytes.
var ErrTopic = errors.New("brokered: a retained message's topic must be 1–255 bytes")

// Retain appends a KindRetained record: payload to be published retained on topic, in order
// with the records Write appends (an empty payload clears the topic). Safe to call beside
// Write. Errors: ErrTopic, ErrClosed, the outbox's I/O errors (a full outbox drops, counted).
func (k *Sink) Retain(topic string, payload []byte) error {
	if len(topic) == 0 || len(topic) > 255 {
		return ErrTopic
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return ErrClosed
	}
	k.buf = append(AppendRecord(k.buf[:0], KindRetained, event.NewID(time.Now()), "-", topic), payload...)
	return k.append(k.buf)
}

// SeedCount appends a count record for zone or line name of stream when the sink has counted
// no event of it yet: its figures, all 0, so that a peer shows a state before the first event
// (Home Assistant's sensors). It does nothing without Settings.Counts or when the name is not
// 1–255 bytes.
func (k *Sink) SeedCount(stream, name string, line bool) error {
	if !k.s.Counts || name == "" || len(name) > 255 {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return ErrClosed
	}
	stream = routable(stream)
	if p := k.counts.streams[stream][name]; p != nil && p.line == line {
		return nil
	}
	p := k.counts.place(stream, name, line)
	p.time = time.Now()
	k.buf = p.appendJSON(AppendRecord(k.buf[:0], KindCount, event.NewID(time.Now()), p.stream, p.name))
	return k.append(k.buf)
}
