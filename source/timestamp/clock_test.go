package timestamp

import (
	"testing"
	"time"
)

type step struct {
	ts      uint32
	arrival time.Duration // since t0
	restart bool          // call Restart before this step
	pts     time.Duration
	ev      Event
}

var clockCases = []struct {
	name  string
	steps []step
}{
	{"steady 25 fps", []step{
		{ts: 1000, arrival: 0, pts: 0},
		{ts: 1000 + 3600, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 1000 + 7200, arrival: 80 * time.Millisecond, pts: 80 * time.Millisecond},
	}},
	{"wraparound", []step{
		{ts: 0xFFFFFFFF - 1799, arrival: 0, pts: 0},
		{ts: 1800, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 5400, arrival: 80 * time.Millisecond, pts: 80 * time.Millisecond},
	}},
	{"b-frames go back and forth", []step{
		{ts: 90000, arrival: 0, pts: 0},
		{ts: 90000 + 3*3600, arrival: 40 * time.Millisecond, pts: 120 * time.Millisecond},
		{ts: 90000 + 3600, arrival: 80 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 90000 + 2*3600, arrival: 120 * time.Millisecond, pts: 80 * time.Millisecond},
	}},
	{"dvr jumps forward by an hour", []step{
		{ts: 0, arrival: 0, pts: 0},
		{ts: 3600, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 3600 + 3600*90000, arrival: 80 * time.Millisecond, pts: 80 * time.Millisecond, ev: EventOutlier},
		{ts: 7200 + 3600*90000, arrival: 120 * time.Millisecond, pts: 120 * time.Millisecond, ev: EventOutlier},
		{ts: 10800 + 3600*90000, arrival: 160 * time.Millisecond, pts: 160 * time.Millisecond, ev: EventJump},
		{ts: 14400 + 3600*90000, arrival: 200 * time.Millisecond, pts: 200 * time.Millisecond},
	}},
	{"counter goes back by a minute", []step{
		{ts: 60 * 90000, arrival: 0, pts: 0},
		{ts: 60*90000 + 3600, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 100, arrival: 80 * time.Millisecond, pts: 80 * time.Millisecond, ev: EventOutlier},
		{ts: 3700, arrival: 120 * time.Millisecond, pts: 120 * time.Millisecond, ev: EventOutlier},
		{ts: 7300, arrival: 160 * time.Millisecond, pts: 160 * time.Millisecond, ev: EventJump},
		{ts: 10900, arrival: 200 * time.Millisecond, pts: 200 * time.Millisecond},
	}},
	{"one timestamp three hours off is an outlier", []step{
		{ts: 1000, arrival: 0, pts: 0},
		{ts: 1000 + 3*3600, arrival: 40 * time.Millisecond, pts: 120 * time.Millisecond},
		{ts: 1000 + 3600 + 3*3600*90000, arrival: 80 * time.Millisecond, pts: 160 * time.Millisecond, ev: EventOutlier},
		{ts: 1000 + 2*3600, arrival: 120 * time.Millisecond, pts: 80 * time.Millisecond},
		{ts: 1000 + 6*3600, arrival: 160 * time.Millisecond, pts: 240 * time.Millisecond},
	}},
	{"two outliers that disagree are no jump", []step{
		{ts: 0, arrival: 0, pts: 0},
		{ts: 1 << 30, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond, ev: EventOutlier},
		{ts: 1 << 31, arrival: 80 * time.Millisecond, pts: 80 * time.Millisecond, ev: EventOutlier},
		{ts: 3 << 30, arrival: 120 * time.Millisecond, pts: 120 * time.Millisecond, ev: EventOutlier},
		{ts: 4 * 3600, arrival: 160 * time.Millisecond, pts: 160 * time.Millisecond},
	}},
	{"a long silence that the timestamps explain is no jump", []step{
		{ts: 0, arrival: 0, pts: 0},
		{ts: 30 * 90000, arrival: 30 * time.Second, pts: 30 * time.Second},
	}},
	{"a burst after a stall is no jump", []step{
		{ts: 0, arrival: 0, pts: 0},
		{ts: 3600, arrival: 20 * time.Second, pts: 40 * time.Millisecond},
		{ts: 7200, arrival: 20 * time.Second, pts: 80 * time.Millisecond},
	}},
	{"restart re-bases on arrival time", []step{
		{ts: 500, arrival: 0, pts: 0},
		{ts: 500 + 3600, arrival: 40 * time.Millisecond, pts: 40 * time.Millisecond},
		{ts: 123456789, arrival: 2040 * time.Millisecond, restart: true, pts: 2040 * time.Millisecond},
		{ts: 123456789 + 3600, arrival: 2080 * time.Millisecond, pts: 2080 * time.Millisecond},
	}},
}

func TestClock(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range clockCases {
		t.Run(tc.name, func(t *testing.T) {
			c := Clock{Rate: 90000, MaxJump: 10 * time.Second}
			if err := c.Init(); err != nil {
				t.Fatal(err)
			}
			var jumps uint64
			for i, s := range tc.steps {
				if s.restart {
					c.Restart()
				}
				pts, ev := c.Convert(s.ts, t0.Add(s.arrival))
				if pts != s.pts || ev != s.ev {
					t.Fatalf("step %d: got pts %v event %v, want %v %v", i, pts, ev, s.pts, s.ev)
				}
				if ev == EventJump {
					jumps++
				}
			}
			if c.Jumps() != jumps {
				t.Fatalf("Jumps() = %d, want %d", c.Jumps(), jumps)
			}
		})
	}
}

func TestClockInit(t *testing.T) {
	c := Clock{}
	if err := c.Init(); err == nil {
		t.Fatal("Init accepted rate 0")
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		ticks int64
		rate  int
		want  time.Duration
	}{
		{90000, 90000, time.Second},
		{-3600, 90000, -40 * time.Millisecond},
		{90000 * 1 << 30, 90000, time.Second << 30},
		{1, 90000, 11111},
	} {
		if got := Duration(tc.ticks, tc.rate); got != tc.want {
			t.Errorf("Duration(%d, %d) = %v, want %v", tc.ticks, tc.rate, got, tc.want)
		}
	}
}

func BenchmarkClockConvert(b *testing.B) {
	c := Clock{Rate: 90000}
	if err := c.Init(); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Convert(uint32(i*3600), t0.Add(time.Duration(i)*40*time.Millisecond))
	}
}
