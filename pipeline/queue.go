package pipeline

import (
	"context"
	"github.com/vinfer/vinfer/config"
	"sync"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
)

// DropPolicy is what a stream does when inference falls behind it (resolved: never DropAuto).
type DropPolicy = config.DropPolicy

// Drop policies the queues apply.
const (
	// Block makes the stream wait for room: nothing is lost (files).
	Block = config.DropBlock
	// DropOldest discards the oldest queued frame to make room for the newest (live sources:
	// results stay current, latency stays bounded).
	DropOldest = config.DropOldest
)

// item is one frame on its way to inference: either already preprocessed into slot (CPU path)
// or still a frame the inference worker preprocesses itself (GPU path).
type item struct {
	st     *stream
	frame  *frame.Frame // the decoded frame, held until its result is out or it is dropped
	tr     preprocess.Transform
	failed bool // preprocessing failed: dropped after its batch ran
	// crop is the rectangle (x, y, w, h) of the frame the detector sees (activity crop:
	// motion; w 0: the whole frame); cropX, cropY where the crop used starts.
	crop         [4]int
	cropX, cropY float32

	index     int64
	pts       time.Duration
	wallclock time.Time
	width     int
	height    int
	decoded   time.Time // when the decoder emitted the frame
	queued    time.Time
	decodeDur time.Duration // decoder work for this frame
	prepDur   time.Duration // preprocessing
	seq       uint64        // the stream's count of items popped before this one (result order)
	wake      time.Time     // the first frame inferred after a wake: when the wake began
}

// queue is a stream's bounded FIFO of items waiting for its model's scheduler.
type queue struct {
	mu     sync.Mutex
	items  []item // ring
	head   int
	n      int
	room   chan struct{} // signalled when an item leaves (wakes a blocked producer)
	ready  chan struct{} // the scheduler's wake-up, shared by all queues of a model
	closed bool
	popped uint64 // items popped so far: the next one's seq
	// background marks an unpaced file's queue: the scheduler serves it after the queues of
	// live streams (set before the queue is added to the scheduler).
	background bool
}

func newQueue(depth int, ready chan struct{}) *queue {
	return &queue{items: make([]item, depth), room: make(chan struct{}, 1), ready: ready}
}

// push appends it. When full: Block waits for room (or ctx), DropOldest removes the oldest
// item and returns it as dropped (the caller recycles it). ok is false when ctx ended or the
// queue closed; then it was not queued.
func (q *queue) push(ctx context.Context, it item, policy DropPolicy) (dropped item, wasDropped, ok bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return item{}, false, false
		}
		if q.n < len(q.items) {
			q.items[(q.head+q.n)%len(q.items)] = it
			q.n++
			q.mu.Unlock()
			signal(q.ready)
			return item{}, false, true
		}
		if policy == DropOldest {
			dropped = q.items[q.head]
			q.items[q.head] = item{}
			q.head = (q.head + 1) % len(q.items)
			q.items[(q.head+q.n-1)%len(q.items)] = it
			q.mu.Unlock()
			signal(q.ready)
			return dropped, true, true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return item{}, false, false
		}
	}
}

// pop takes up to max items into dst; the scheduler calls it.
func (q *queue) pop(dst []item, max int) []item {
	q.mu.Lock()
	for q.n > 0 && max > 0 {
		it := q.items[q.head]
		it.seq = q.popped
		q.popped++
		dst = append(dst, it)
		q.items[q.head] = item{}
		q.head = (q.head + 1) % len(q.items)
		q.n--
		max--
	}
	q.mu.Unlock()
	signal(q.room)
	return dst
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// close marks the queue closed and returns what was still queued.
func (q *queue) close() []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var rest []item
	for q.n > 0 {
		rest = append(rest, q.items[q.head])
		q.items[q.head] = item{}
		q.head = (q.head + 1) % len(q.items)
		q.n--
	}
	signal(q.room)
	return rest
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
