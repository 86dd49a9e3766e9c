package frame

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type countingBacking struct{ resets, frees *atomic.Int32 }

func (b countingBacking) Reset() { b.resets.Add(1) }
func (b countingBacking) Free()  { b.frees.Add(1) }

func newCountingPool(t *testing.T, capacity int) (*Pool, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var resets, frees atomic.Int32
	p := NewPool("test", capacity, func() (Backing, error) { return countingBacking{&resets, &frees}, nil })
	return p, &resets, &frees
}

func TestPoolBoundedAndRecycled(t *testing.T) {
	p, resets, frees := newCountingPool(t, 2)
	ctx := context.Background()
	a, _ := p.Get(ctx)
	b, _ := p.Get(ctx)
	if _, ok, _ := p.TryGet(); ok {
		t.Fatal("TryGet succeeded beyond capacity")
	}
	st := p.Stats()
	if st.InUse != 2 || st.Allocated != 2 || st.Free != 0 || st.HighWater != 2 {
		t.Fatalf("stats %+v", st)
	}
	a.Retain()
	a.Release()
	if resets.Load() != 0 {
		t.Fatal("reset before last release")
	}
	a.Release()
	b.Release()
	if resets.Load() != 2 {
		t.Fatalf("resets = %d, want 2", resets.Load())
	}
	c, _ := p.Get(ctx) // recycled, not allocated
	if p.Stats().Allocated != 2 {
		t.Fatalf("allocated %d after recycle", p.Stats().Allocated)
	}
	c.Release()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if frees.Load() != 2 {
		t.Fatalf("frees = %d, want 2", frees.Load())
	}
	if _, err := p.Get(ctx); err != ErrPoolClosed {
		t.Fatalf("Get after Close: %v", err)
	}
}

func TestPoolGetWaitsForRelease(t *testing.T) {
	p, _, _ := newCountingPool(t, 1)
	f, _ := p.Get(context.Background())
	got := make(chan *Frame)
	go func() {
		g, err := p.Get(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	select {
	case <-got:
		t.Fatal("Get did not wait")
	case <-time.After(20 * time.Millisecond):
	}
	f.Release()
	g := <-got
	g.Release()
	ctx, cancel := context.WithCancel(context.Background())
	h, _ := p.Get(ctx)
	cancel()
	if _, err := p.Get(ctx); err != context.Canceled {
		t.Fatalf("Get with cancelled ctx: %v", err)
	}
	h.Release()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPoolDebugReportsLeakAndDoubleRelease(t *testing.T) {
	SetDebug(true)
	defer SetDebug(false)
	p, _, frees := newCountingPool(t, 4)
	ctx := context.Background()
	leaked, _ := p.Get(ctx)
	twice, _ := p.Get(ctx)
	twice.Release()
	twice.Release() // recorded, not a panic, in debug mode
	err := p.Close()
	if err == nil {
		t.Fatal("Close reported nothing")
	}
	msg := err.Error()
	if !strings.Contains(msg, "1 frame(s) never released") || !strings.Contains(msg, "double Release") ||
		!strings.Contains(msg, "TestPoolDebugReportsLeakAndDoubleRelease") {
		t.Fatalf("unexpected report: %v", msg)
	}
	leaked.Release() // freed now that the pool is closed
	if frees.Load() != 2 {
		t.Fatalf("frees = %d, want 2", frees.Load())
	}
}

func TestDoubleReleasePanicsOutsideDebug(t *testing.T) {
	p, _, _ := newCountingPool(t, 1)
	f, _ := p.Get(context.Background())
	f.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on double Release")
		}
	}()
	f.Release()
}

func TestPoolConcurrent(t *testing.T) {
	p, _, _ := newCountingPool(t, 3)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				f, err := p.Get(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				f.Retain()
				f.Release()
				f.Release()
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	if st.InUse != 0 || st.Allocated > 3 || st.HighWater > 3 {
		t.Fatalf("stats %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPoolGetReleaseAllocs(t *testing.T) {
	p, _, _ := newCountingPool(t, 2)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		f, _ := p.Get(ctx)
		f.Release()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Get/Release", allocs)
	}
}

func TestPoolWaitIdle(t *testing.T) {
	p := NewPool("idle", 2, nil)
	defer p.Close()
	ctx := context.Background()
	if !p.WaitIdle(ctx) {
		t.Fatal("an unused pool is not idle")
	}
	a, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if p.WaitIdle(short) {
		t.Fatal("idle with a frame out")
	}
	done := make(chan bool)
	go func() { done <- p.WaitIdle(ctx) }()
	a.Release()
	if !<-done {
		t.Fatal("WaitIdle did not see the release")
	}
}
