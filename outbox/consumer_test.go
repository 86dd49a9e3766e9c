package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// waiting reports whether a reader waits for an append.
func waiting(o *Outbox) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.waiting
}

func TestReadWaits(t *testing.T) {
	o, _ := open(t, t.TempDir(), nil)
	c, _ := o.Consumer("c")
	got := make(chan error, 1)
	go func() {
		recs, err := c.Read(context.Background(), 10, 1<<20)
		if err == nil && (len(recs) != 1 || string(recs[0].Data) != "wake") {
			err = fmt.Errorf("records %v", recs)
		}
		got <- err
	}()
	eventually(t, func() bool { return waiting(o) })
	o.Append([]byte("wake"))
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := c.Read(ctx, 10, 1<<20)
		got <- err
	}()
	eventually(t, func() bool { return waiting(o) })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}

	go func() {
		_, err := c.Read(context.Background(), 10, 1<<20)
		got <- err
	}()
	eventually(t, func() bool { return waiting(o) })
	o.Close()
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Fatalf("read at close: %v", err)
	}
}

// TestConcurrent runs appenders, consumers that acknowledge as they go and stats readers at
// once (run it with -race): every consumer sees every record once, in order.
func TestConcurrent(t *testing.T) {
	const appenders, perAppender, consumers = 4, 1500, 3
	o, _ := open(t, t.TempDir(), func(o *Outbox) {
		o.SegmentSize = 8 << 10
		o.MaxBytes = 64 << 20
		o.Fsync = FsyncInterval
		o.FsyncEvery = time.Millisecond
		o.CursorEvery = time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, appenders+consumers+1)
	for a := range appenders {
		wg.Go(func() {
			for i := range perAppender {
				if _, err := o.Append(fmt.Appendf(nil, "a%d-%d", a, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range consumers {
		c, err := o.Consumer(fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			next := uint64(1)
			last := map[int]int{}
			for next <= appenders*perAppender {
				recs, err := c.Read(ctx, 1+int(next%37), 4096)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range recs {
					var a, n int
					fmt.Sscanf(string(r.Data), "a%d-%d", &a, &n)
					if r.Seq != next || n != last[a] {
						errs <- fmt.Errorf("%s: record %d (%s), want %d", c.Name(), r.Seq, r.Data, next)
						return
					}
					last[a]++
					next++
				}
				if err := c.Ack(next - 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var statsWG sync.WaitGroup
	statsWG.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			o.Stats()
			o.FirstSeq()
			o.Sync()
		}
	})
	defer func() { close(stop); statsWG.Wait() }()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case err := <-errs:
		cancel()
		t.Fatal(err)
	case <-done:
	}
	if !allAcked(o, consumers, appenders*perAppender) {
		t.Fatal("not every record acknowledged")
	}
}

func allAcked(o *Outbox, n int, seq uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range n {
		if c := o.consumers[fmt.Sprintf("c%d", i)]; c == nil || c.acked != seq {
			return false
		}
	}
	return true
}

func TestReadCorrupt(t *testing.T) {
	dir := t.TempDir()
	o, logs := open(t, dir, func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 1 << 20 })
	c, _ := o.Consumer("c")
	appendN(t, o, 300)
	// Damage the 10th record of the second segment after Init checked it.
	o.mu.Lock()
	s := o.segs[1]
	off, _ := s.offsetOf(s.base + 9)
	lost := s.last - (s.base + 9) + 1
	o.mu.Unlock()
	flipFile(s.path, off+recordHeaderSize)
	recs := readN(t, c, int(300-lost))
	if recs[len(recs)-1].Seq != 300 {
		t.Fatalf("last record read %d", recs[len(recs)-1].Seq)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq != recs[i-1].Seq+1 && (recs[i-1].Seq != s.base+8 || recs[i].Seq != s.last+1) {
			t.Fatalf("gap %d..%d", recs[i-1].Seq, recs[i].Seq)
		}
	}
	if st := c.Stats(); st.Dropped[ReasonCorrupt] != lost || logs.Count("corrupt record") != 1 {
		t.Fatalf("dropped %v, want %d corrupt", st.Dropped, lost)
	}
}
