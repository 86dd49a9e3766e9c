package pipeline

import (
	"slices"
	"testing"

	"github.com/vinfer/vinfer/sink"
)

// TestInOrder: results of two streams arriving out of their order, with gaps (items without a
// result), come out in each stream's order, every result once.
func TestInOrder(t *testing.T) {
	a, b := &stream{}, &stream{}
	msg := func(st *stream, seq uint64, result bool) resultMsg {
		m := resultMsg{st: st, seq: seq}
		if result {
			m.r = &sink.Result{Frame: int64(seq)}
		}
		return m
	}
	in := []resultMsg{
		msg(a, 2, true), msg(b, 0, true), msg(a, 1, false), msg(b, 2, true), msg(a, 0, true),
		msg(a, 4, true), msg(b, 1, true), msg(a, 3, true), msg(b, 3, false), msg(b, 4, true),
	}
	got := map[*stream][]int64{}
	for _, m := range in {
		inOrder(m, func(m resultMsg) { got[m.st] = append(got[m.st], m.r.Frame) })
	}
	if want := []int64{0, 2, 3, 4}; !slices.Equal(got[a], want) {
		t.Errorf("stream a: %v, want %v", got[a], want)
	}
	if want := []int64{0, 1, 2, 4}; !slices.Equal(got[b], want) {
		t.Errorf("stream b: %v, want %v", got[b], want)
	}
	if len(a.outHeld) != 0 || len(b.outHeld) != 0 || a.outNext != 5 || b.outNext != 5 {
		t.Errorf("held %d and %d, next %d and %d; want none held, next 5", len(a.outHeld), len(b.outHeld), a.outNext, b.outNext)
	}
}
