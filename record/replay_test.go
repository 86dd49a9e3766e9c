package record_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
)

// coded is an access unit's NAL units other than delimiters and parameter sets, each after a
// start code: what a recording keeps of it.
func coded(c media.Codec, annexb []byte) []byte {
	var b []byte
	for n, rest := h26x.NextNALU(annexb); len(n) > 0; n, rest = h26x.NextNALU(rest) {
		switch h26x.Classify(c, n) {
		case h26x.KindAUD, h26x.KindSPS, h26x.KindPPS, h26x.KindVPS:
			continue
		}
		b = append(append(b, 0, 0, 0, 1), n...)
	}
	return b
}

// TestReplay: the recorded units of a range come back in order, from the key frame starting
// the GOP that holds the range's start through the GOP that holds its end, each the coded
// video fed (parameter sets before key frames), with the PTS-DTS offsets fed and wall times
// from the recording; nothing recorded is ErrNothing; an error of fn stops it.
func TestReplay(t *testing.T) {
	units := readUnits(t, sample, 20*time.Second)
	r := newRecorder(t, t.TempDir(), nil)
	feed(t, r, r.Observer("cam1"), units)
	r.Close()

	var got []*media.AccessUnit
	var ats []time.Time
	from, to := t0.Add(5500*time.Millisecond), t0.Add(9500*time.Millisecond)
	if err := r.Replay(context.Background(), "cam1", from, to, func(au *media.AccessUnit, at time.Time) error {
		got, ats = append(got, au), append(ats, at)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !got[0].Key || got[0].DTS != 0 {
		t.Fatalf("%d units, the first key %v at DTS %v", len(got), len(got) > 0 && got[0].Key, got[0].DTS)
	}
	// find the first unit in the feed
	start := -1
	for i := range units {
		if bytes.Equal(coded(units[i].Codec, units[i].Data), coded(got[0].Codec, got[0].Data)) {
			start = i
			break
		}
	}
	if start < 0 || start+len(got) > len(units) {
		t.Fatalf("the first replayed unit is not one fed (index %d, %d replayed)", start, len(got))
	}
	if w := units[start].Wallclock; w.After(from) || ats[0].Sub(w).Abs() > 100*time.Millisecond {
		t.Fatalf("replay starts at the unit fed at %v (replayed at %v), want the GOP holding %v", w, ats[0], from)
	}
	for i, au := range got {
		in := &units[start+i]
		if !bytes.Equal(coded(in.Codec, in.Data), coded(au.Codec, au.Data)) || au.Key != in.Key {
			t.Fatalf("unit %d differs from the one fed", i)
		}
		if d := (au.PTS - au.DTS) - (in.PTS - in.DTS); d.Abs() > time.Millisecond {
			t.Fatalf("unit %d: PTS-DTS %v, fed %v", i, au.PTS-au.DTS, in.PTS-in.DTS)
		}
		if au.Key && !bytes.Contains(au.Data, []byte{0, 0, 0, 1, 0x67}) {
			t.Fatalf("key frame %d without its SPS", i)
		}
	}
	last := units[start+len(got)-1].Wallclock
	if last.Before(to.Add(-100*time.Millisecond)) || last.After(to.Add(3*time.Second)) || start+len(got) < len(units) && !units[start+len(got)].Key {
		t.Fatalf("replay ends at the unit fed at %v, want the end of the GOP holding %v", last, to)
	}
	t.Logf("%d units replayed from the unit fed at %v", len(got), units[start].Wallclock.Sub(t0))

	if err := r.Replay(context.Background(), "cam1", t0.Add(time.Hour), t0.Add(2*time.Hour), func(*media.AccessUnit, time.Time) error { return nil }); err != record.ErrNothing {
		t.Fatalf("a range not recorded: %v, want ErrNothing", err)
	}
	stop := context.Canceled
	n := 0
	if err := r.Replay(context.Background(), "cam1", t0, to, func(*media.AccessUnit, time.Time) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("fn's error: %v after %d units", err, n)
	}
}
