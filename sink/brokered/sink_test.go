package brokered_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// recorder is a Publisher keeping decoded records.
type recorder struct {
	mu    sync.Mutex
	recs  []brokered.Record
	fail  bool
	block chan struct{}
}

func (p *recorder) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail {
		return 0, errors.New("down")
	}
	for _, r := range recs {
		d, err := brokered.Decode(append([]byte(nil), r.Data...))
		if err != nil {
			return 0, err
		}
		p.recs = append(p.recs, d)
	}
	return len(recs), nil
}

func (p *recorder) count(kind brokered.Kind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.recs {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

func open(t *testing.T, s brokered.Settings, p deliver.Publisher) *brokered.Sink {
	t.Helper()
	k, err := brokered.Open("test", &s, sink.Env{Dir: t.TempDir()}, func() (deliver.Publisher, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCarry(t *testing.T) {
	for _, tc := range []struct {
		carry      brokered.Carry
		every      int
		events     int
		detections int
	}{
		{brokered.CarryEvents, 0, 20, 0},
		{brokered.CarryDetections, 0, 0, 10},
		{brokered.CarryBoth, 3, 20, 4}, // results 0, 3, 6, 9
	} {
		t.Run(tc.carry.String(), func(t *testing.T) {
			p := &recorder{}
			k := open(t, brokered.Settings{Carry: tc.carry, DetectionsEvery: tc.every}, p)
			for i := range 10 {
				if err := k.Write(bt.Result("cam1", int64(i), 2)); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			if e, d := p.count(brokered.KindEvent), p.count(brokered.KindDetections); e != tc.events || d != tc.detections {
				t.Fatalf("events %d detections %d, want %d %d", e, d, tc.events, tc.detections)
			}
			for _, r := range p.recs {
				if string(r.Stream) != "cam1" || r.ID.IsZero() || len(r.Body) == 0 || r.Body[0] != '{' {
					t.Fatalf("record %+v", r)
				}
			}
		})
	}
}

func TestDecodeSettings(t *testing.T) {
	var s struct {
		brokered.Settings `yaml:",inline"`
		URL               string `yaml:"url"`
	}
	decl := config.NewSink("x", map[string]any{"url": "u", "carry": "both", "detections_every": 5,
		"outbox": map[string]any{"fsync": "always", "max_bytes": 1 << 20, "max_age": "1h"}})
	if err := decl.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.URL != "u" || s.Carry != brokered.CarryBoth || s.DetectionsEvery != 5 ||
		outbox.FsyncPolicy(s.Outbox.Fsync) != outbox.FsyncAlways || s.Outbox.MaxAge != config.Duration(time.Hour) {
		t.Fatalf("%+v", s)
	}
	for _, bad := range []map[string]any{{"carry": "all"}, {"outbox": map[string]any{"fsync": "sometimes"}}, {"bogus": 1}} {
		if err := config.NewSink("x", bad).Decode(&s); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

func TestDuplicateName(t *testing.T) {
	k := open(t, brokered.Settings{Name: "dup"}, &recorder{})
	defer k.Close()
	s := brokered.Settings{Name: "dup"}
	_, err := brokered.Open("test", &s, sink.Env{Dir: t.TempDir()}, func() (deliver.Publisher, error) { return &recorder{}, nil })
	if !errors.Is(err, brokered.ErrDuplicateName) {
		t.Fatalf("err %v", err)
	}
	s = brokered.Settings{Name: "bad/name"}
	if _, err := brokered.Open("test", &s, sink.Env{Dir: t.TempDir()}, nil); !errors.Is(err, brokered.ErrName) {
		t.Fatalf("err %v", err)
	}
}

// A sink whose publisher is stuck: Write stays fast, depth grows; after Close the records are
// still in the outbox and a new sink on the same directory delivers them.
func TestStuckPublisherThenResume(t *testing.T) {
	dir := t.TempDir()
	p := &recorder{block: make(chan struct{})}
	s := brokered.Settings{DrainTimeout: config.Duration(time.Millisecond)}
	k, err := brokered.Open("test", &s, sink.Env{Dir: dir}, func() (deliver.Publisher, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 500 {
		if err := k.Write(bt.Result("cam1", int64(i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("500 writes took %v", d)
	}
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Depth == 500 }, "depth 500 (have %d)", k.Stats().Depth)
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, brokered.DataDir, "outbox", "test")); err != nil {
		t.Fatal(err)
	}
	p2 := &recorder{}
	s = brokered.Settings{}
	k2, err := brokered.Open("test", &s, sink.Env{Dir: dir}, func() (deliver.Publisher, error) { return p2, nil })
	if err != nil {
		t.Fatal(err)
	}
	bt.Wait(t, bt.Timeout, func() bool { return p2.count(brokered.KindEvent) >= 500 }, "500 events after restart")
	if err := k2.Close(); err != nil {
		t.Fatal(err)
	}
	if n := p2.count(brokered.KindEvent); n != 500 {
		t.Fatalf("%d events", n)
	}
}
