package api

import (
	"context"
	"encoding/json"
	scene "github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/metrics"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// event is one inferred frame as the app's fan-out encodes it (sink.AppendJSON): boxes are
// [x1,y1,x2,y2] in frame pixels, pts in seconds.
type event struct {
	Stream     string      `json:"source"`
	Frame      int64       `json:"frame"`
	PTS        float64     `json:"pts"`
	Width      int         `json:"width"`
	Height     int         `json:"height"`
	Model      string      `json:"model"`
	Detections []detection `json:"detections"`
	// End marks a stream's closing record (its last tracks' events, no frame): not kept.
	End bool `json:"end"`
}

type detection struct {
	ClassID int        `json:"class_id"`
	Label   string     `json:"label"`
	Score   float32    `json:"score"`
	Box     [4]float32 `json:"box"`
}

// eventWriteTimeout bounds one write to an event stream: a subscriber that does not read for
// that long is dropped.
const eventWriteTimeout = 5 * time.Second

// historyLen is how many recent results the tracker keeps per stream: enough to cover the
// frames between the decoder's latest frame and inference (queue depth + batch).
const historyLen = 32

// tracker keeps each stream's recent results, so a snapshot can draw the boxes of the very
// frame it shows.
type tracker struct {
	mu      sync.Mutex
	streams map[string]*history
	changed chan struct{} // closed and replaced on every new result
}

type history struct {
	ring [historyLen]event
	n    int // results kept (≤ historyLen)
	next int // ring index of the next write
}

func newTracker() *tracker {
	return &tracker{streams: map[string]*history{}, changed: make(chan struct{})}
}

// run consumes the app's results until ctx ends.
func (t *tracker) run(ctx context.Context, results <-chan []byte) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-results:
			if !ok {
				return
			}
			var ev event
			if err := json.Unmarshal(msg, &ev); err != nil || ev.End {
				continue
			}
			t.add(ev)
		}
	}
}

func (t *tracker) add(ev event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.streams[ev.Stream]
	if h == nil {
		h = &history{}
		t.streams[ev.Stream] = h
	}
	h.ring[h.next] = ev
	h.next = (h.next + 1) % historyLen
	h.n = min(h.n+1, historyLen)
	close(t.changed)
	t.changed = make(chan struct{})
}

// forget drops a removed stream's results.
func (t *tracker) forget(stream string) {
	t.mu.Lock()
	delete(t.streams, stream)
	t.mu.Unlock()
}

// latest returns a stream's newest result.
func (t *tracker) latest(stream string) (event, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.streams[stream]
	if h == nil || h.n == 0 {
		return event{}, false
	}
	return h.ring[(h.next+historyLen-1)%historyLen], true
}

// match returns the result for frame, else the newest one before it, else the newest; done
// reports that no result for frame can still come (a result for frame or a later one arrived;
// results arrive in frame order per stream).
func (t *tracker) match(stream string, frame int64) (ev event, found, done bool, changed <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed = t.changed
	h := t.streams[stream]
	if h == nil || h.n == 0 {
		return event{}, false, false, changed
	}
	newest := h.ring[(h.next+historyLen-1)%historyLen]
	done = newest.Frame >= frame
	best := -1
	for i := 0; i < h.n; i++ {
		idx := (h.next + historyLen - 1 - i) % historyLen
		if f := h.ring[idx].Frame; f <= frame && (best < 0 || f > h.ring[best].Frame) {
			best = idx
		}
	}
	if best < 0 {
		return newest, true, done, changed
	}
	return h.ring[best], true, done, changed
}

// wait returns the result to draw over frame: it waits (up to timeout) until the result for
// that frame could have arrived, then picks as match does.
func (t *tracker) wait(ctx context.Context, stream string, frame int64, timeout time.Duration) (event, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ev, found, done, changed := t.match(stream, frame)
		if done || timeout <= 0 {
			return ev, found
		}
		select {
		case <-changed:
		case <-deadline.C:
			ev, found, _, _ = t.match(stream, frame)
			return ev, found
		case <-ctx.Done():
			return ev, found
		}
	}
}

// subscription reads ?stream=ID&type=T1,T2 (type=all: every scene event); without type the
// subscriber gets results.
func (s *Server) subscription(w http.ResponseWriter, r *http.Request) (defs.Subscription, bool) {
	q := r.URL.Query()
	sub := defs.Subscription{Stream: q.Get("stream")}
	if sub.Stream != "" && !s.streamExists(sub.Stream) {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", sub.Stream)
		return sub, false
	}
	if t := q.Get("type"); t != "" {
		sub.Events = true
		if t != "all" {
			for _, w1 := range strings.Split(t, ",") {
				ty, err := scene.ParseType(w1)
				if err != nil {
					writeError(w, http.StatusBadRequest, "type: %v", err)
					return sub, false
				}
				sub.Types = append(sub.Types, ty.String())
			}
		}
	}
	return sub, true
}

// sse streams results as Server-Sent Events, one "result" event per inferred frame, or with
// ?type= one "event" event per scene event; a comment every 15 s keeps proxies from closing an
// idle stream.
func (s *Server) sse(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.subscription(w, r)
	if !ok {
		return
	}
	name := "result"
	if sub.Events {
		name = "event"
	}
	results, cancel := s.App.Subscribe(sub)
	defer cancel()
	streamDeadlines(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// send writes buf within eventWriteTimeout: a client that stops reading is dropped (and
	// counted).
	send := func(buf []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		_, err := w.Write(buf)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			s.subscriberGone(metrics.SubscriberSSE, r, err)
		}
		return err == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	buf := make([]byte, 0, 4096)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			buf = append(buf[:0], ": keepalive\n\n"...)
		case msg, ok := <-results:
			if !ok {
				return
			}
			buf = appendEvent(buf[:0], name, msg)
			s.Metrics.ObserveEvent("sse")
			// Send whatever else is already waiting in the same write.
			for more := true; more && len(buf) < 64<<10; {
				select {
				case m, ok := <-results:
					if ok {
						buf = appendEvent(buf, name, m)
						s.Metrics.ObserveEvent("sse")
					}
					more = ok
				default:
					more = false
				}
			}
		}
		if !send(buf) {
			return
		}
	}
}

func appendEvent(b []byte, name string, msg []byte) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, msg...)
	return append(b, "\n\n"...)
}

// websocket streams results over a WebSocket (RFC 6455), one text message per inferred frame.
// Messages from the client are ignored; a client too slow to keep up misses messages rather than
// slowing the pipeline.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	sub, ok := s.subscription(w, r)
	if !ok {
		return
	}
	streamDeadlines(w)
	// The guard checked the Origin (same origin or output.allowed_origins); the library's own
	// check would refuse the configured ones.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled,
		InsecureSkipVerify: true})
	if err != nil {
		s.Log.Debug("api: websocket accept", "err", err)
		return
	}
	defer c.CloseNow()
	results, cancel := s.App.Subscribe(sub)
	defer cancel()
	ctx := c.CloseRead(r.Context())
	for {
		select {
		case <-ctx.Done():
			if s.ctx.Err() != nil {
				c.Close(websocket.StatusGoingAway, "vinfer is shutting down")
			}
			return
		case msg, ok := <-results:
			if !ok {
				c.Close(websocket.StatusNormalClosure, "")
				return
			}
			wctx, done := context.WithTimeout(ctx, eventWriteTimeout)
			err := c.Write(wctx, websocket.MessageText, msg)
			done()
			if err != nil {
				s.subscriberGone(metrics.SubscriberWS, r, err)
				return
			}
			s.Metrics.ObserveEvent("websocket")
		}
	}
}
