package live

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vinfer/vinfer/media"
)

func TestQueue(t *testing.T) {
	q := NewQueue(2)
	ctx := context.Background()
	src := []byte{0, 0, 0, 1, 0x65, 1, 2, 3}
	if !q.Push(&media.AccessUnit{Data: src, PTS: time.Second, Key: true}) {
		t.Fatal("push 1 refused")
	}
	src[4] = 0x41 // the queue must have copied
	if !q.Push(&media.AccessUnit{Data: src, PTS: 2 * time.Second}) {
		t.Fatal("push 2 refused")
	}
	au, err := q.Pop(ctx)
	if err != nil || au.PTS != time.Second || !au.Key || au.Data[4] != 0x65 {
		t.Fatalf("pop 1: %+v %v", au, err)
	}
	// one slot held by the reader, one queued, one free
	if !q.Push(&media.AccessUnit{Data: src, PTS: 3 * time.Second}) {
		t.Fatal("push 3 refused")
	}
	if q.Push(&media.AccessUnit{Data: src}) {
		t.Fatal("push into a full queue accepted")
	}
	for _, want := range []time.Duration{2 * time.Second, 3 * time.Second} {
		au, err := q.Pop(ctx)
		if err != nil || au.PTS != want || !bytes.Equal(au.Data, src) {
			t.Fatalf("pop: %+v %v, want PTS %v", au, err, want)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := q.Pop(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pop on empty queue: %v", err)
	}
	q.Push(&media.AccessUnit{Data: src})
	q.Close()
	q.Close()
	if _, err := q.Pop(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("pop after close: %v", err)
	}
}

func TestQueueFail(t *testing.T) {
	q := NewQueue(0)
	boom := errors.New("unsupported codec")
	go q.Fail(boom)
	if _, err := q.Pop(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("pop after fail: %v", err)
	}
	q.Close()
	if _, err := q.Pop(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("close after fail replaced the error: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := b.Next(); got != w {
			t.Fatalf("step %d: %v, want %v", i, got, w)
		}
	}
	b.Reset()
	if got := b.Next(); got != want[0] {
		t.Fatalf("after reset: %v", got)
	}
	b = Backoff{Steps: []time.Duration{time.Millisecond}}
	b.Next()
	if got := b.Next(); got != time.Millisecond {
		t.Fatalf("custom steps: %v", got)
	}
}

func TestCountersSnapshot(t *testing.T) {
	var c Counters
	c.Lost.Add(3)
	c.Watchdog.Add(1)
	s := c.Snapshot()
	if s.Lost != 3 || s.Watchdog != 1 || s.Packets != 0 {
		t.Fatalf("snapshot %+v", s)
	}
}

func BenchmarkQueue(b *testing.B) {
	q := NewQueue(4)
	au := &media.AccessUnit{Data: make([]byte, 64<<10)}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(au.Data)))
	for b.Loop() {
		q.Push(au)
		if _, err := q.Pop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
