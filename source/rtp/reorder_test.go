package rtp

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vinfer/vinfer/source/live"
)

// reorderOp is a packet arrival (seq) at a time in ms, or a timer tick (tick true).
type reorderOp struct {
	seq  uint16
	at   int
	tick bool
}

func arrivals(at int, seqs ...uint16) []reorderOp {
	ops := make([]reorderOp, len(seqs))
	for i, s := range seqs {
		ops[i] = reorderOp{seq: s, at: at}
	}
	return ops
}

var reorderCases = []struct {
	name   string
	window int
	ops    []reorderOp
	want   string // delivered packets: seq, or seq/lost-before
	stats  live.Stats
}{
	{"in order", 8, arrivals(0, 10, 11, 12), "10 11 12", live.Stats{}},
	{"swap", 8, arrivals(0, 10, 12, 11, 13), "10 11 12 13", live.Stats{Reordered: 1}},
	{"wraparound", 8, arrivals(0, 65534, 65535, 1, 0, 2), "65534 65535 0 1 2", live.Stats{Reordered: 1}},
	{"duplicates and late", 8, arrivals(0, 10, 12, 12, 11, 11, 10), "10 11 12", live.Stats{Reordered: 1, Duplicates: 1, Late: 2}},
	{"loss given up after the delay", 8, append(arrivals(0, 10, 12, 13), reorderOp{at: 49, tick: true}, reorderOp{at: 50, tick: true}),
		"10 12/1 13", live.Stats{Lost: 1}},
	{"a late packet after giving up is dropped", 8, append(append(arrivals(0, 10, 12), reorderOp{at: 60, tick: true}), arrivals(61, 11, 13)...),
		"10 12/1 13", live.Stats{Lost: 1, Late: 1}},
	{"window overflow releases in order", 4, arrivals(0, 10, 12, 13, 14, 15, 16), "10 12/1 13 14 15 16", live.Stats{Lost: 1}},
	{"big loss", 4, arrivals(0, 10, 11, 500, 501), "10 11 500/488 501", live.Stats{Lost: 488}},
	{"restart confirmed by two packets", 8, arrivals(0, 10, 11, 40000, 40001, 40002), "10 11 40001/1 40002", live.Stats{Late: 1, Resyncs: 1}},
	{"one stray packet is not a restart", 8, arrivals(0, 10, 11, 40000, 12), "10 11 12", live.Stats{Late: 1}},
	{"window 1 only counts loss", 1, arrivals(0, 1, 2, 4, 3, 5), "1 2 4/1 5", live.Stats{Lost: 1, Late: 1}},
}

func TestReorderer(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, tc := range reorderCases {
		t.Run(tc.name, func(t *testing.T) {
			var st live.Counters
			r := Reorderer[uint16]{Window: tc.window, MaxDelay: 50 * time.Millisecond, Stats: &st}
			if err := r.Init(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, op := range tc.ops {
				now := t0.Add(time.Duration(op.at) * time.Millisecond)
				if !op.tick {
					r.Push(op.seq, op.seq, now)
				}
				for {
					v, lost, ok := r.Pop(now)
					if !ok {
						break
					}
					if lost > 0 {
						got = append(got, fmt.Sprintf("%d/%d", v, lost))
					} else {
						got = append(got, fmt.Sprint(v))
					}
				}
			}
			if s := fmt.Sprint(got); s != "["+tc.want+"]" {
				t.Errorf("delivered %s, want [%s]", s, tc.want)
			}
			if s := st.Snapshot(); s != tc.stats {
				t.Errorf("stats %+v, want %+v", s, tc.stats)
			}
		})
	}
}

func TestReordererDeadlineAndDrain(t *testing.T) {
	t0 := time.Unix(0, 0)
	r := Reorderer[int]{Window: 8, MaxDelay: 30 * time.Millisecond}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Deadline(); ok {
		t.Fatal("deadline on an empty reorderer")
	}
	r.Push(1, 1, t0)
	r.Pop(t0)
	r.Push(3, 3, t0.Add(5*time.Millisecond))
	r.Push(4, 4, t0.Add(6*time.Millisecond))
	if _, _, ok := r.Pop(t0.Add(6 * time.Millisecond)); ok {
		t.Fatal("popped across a gap before the deadline")
	}
	if d, ok := r.Deadline(); !ok || !d.Equal(t0.Add(35*time.Millisecond)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	var recycled []int
	r.Drain(func(v int) { recycled = append(recycled, v) })
	slices.Sort(recycled)
	if !slices.Equal(recycled, []int{3, 4}) {
		t.Fatalf("drained %v", recycled)
	}
	// a new run starts anywhere
	r.Push(1000, 1000, t0)
	if v, lost, ok := r.Pop(t0); !ok || v != 1000 || lost != 0 {
		t.Fatalf("after drain: %v %v %v", v, lost, ok)
	}
}
