package analytics

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// benchConfig has 4 zones and 4 lines over a 640×480 frame.
func benchConfig() Config {
	return Config{
		Zones: []Zone{
			{Name: "nw", Polygon: []Point{{20, 20}, {300, 30}, {310, 220}, {30, 230}}, Loiter: Duration(3 * time.Second)},
			{Name: "ne", Polygon: []Point{{340, 20}, {620, 20}, {620, 220}, {480, 260}, {340, 220}}, Inertia: 3},
			{Name: "sw", Polygon: []Point{{0.05, 0.55}, {0.45, 0.55}, {0.45, 0.95}, {0.05, 0.95}}, Normalized: true, Classes: []string{"person"}},
			{Name: "se", Polygon: []Point{{340, 260}, {620, 260}, {620, 460}, {340, 460}, {400, 360}}, Anchor: Center},
		},
		Lines: []Line{
			{Name: "h", Points: []Point{{40, 240}, {600, 240}}},
			{Name: "v", Points: []Point{{320, 40}, {320, 440}}, Inertia: 2},
			{Name: "d1", Points: []Point{{0.1, 0.1}, {0.9, 0.9}}, Normalized: true},
			{Name: "d2", Points: []Point{{600, 40}, {40, 440}}, Classes: []string{"car"}},
		},
		TrackEvents: true,
	}
}

// bench is a synthetic scene: n objects on Lissajous paths, each object's track replaced by a
// new one every 150–400 frames, so tracks keep starting and ending.
type bench struct {
	a      *Analyzer
	f      Frame
	dst    []event.Event
	life   []int
	nextID int64
	i      int
	events int
}

func newBench(n int) *bench {
	s, err := Compile(benchConfig())
	if err != nil {
		panic(err)
	}
	b := &bench{a: New(Options{Stream: "bench", IDs: event.NewGenerator([32]byte{})}, s)}
	b.f = Frame{Width: testW, Height: testH, Objects: make([]Object, n)}
	b.life = make([]int, n)
	for k := range b.f.Objects {
		b.life[k] = 150 + (k*37)%250
		b.nextID++
		label := "person"
		if k%3 == 0 {
			label = "car"
		}
		b.f.Objects[k] = Object{TrackID: b.nextID, ClassID: k % 3, Label: label, Score: 0.8}
	}
	return b
}

// step moves the objects and processes one frame.
func (b *bench) step() {
	b.i++
	t := float64(b.i)
	for k := range b.f.Objects {
		o := &b.f.Objects[k]
		if b.i%b.life[k] == 0 {
			b.nextID++
			o.TrackID = b.nextID
		}
		fk := float64(k)
		x := 320 + 290*math.Sin(0.013*t*(1+fk*0.01)+fk)
		y := 240 + 220*math.Sin(0.017*t*(1+fk*0.007)+2*fk)
		o.Box = [4]float32{float32(x - 15), float32(y - 60), float32(x + 15), float32(y)}
	}
	b.f.Index = int64(b.i)
	b.f.PTS = time.Duration(b.i) * 40 * time.Millisecond
	b.f.Time = testEpoch.Add(b.f.PTS)
	b.dst = b.a.Process(b.dst[:0], &b.f)
	b.events += len(b.dst)
}

func (b *bench) warm() {
	for range 3000 {
		b.step()
	}
	b.events = 0
}

// BenchmarkProcess measures Process per frame at 10, 50 and 200 objects with 4 zones and
// 4 lines (track events on).
func BenchmarkProcess(b *testing.B) {
	for _, n := range []int{10, 50, 200} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			s := newBench(n)
			s.warm()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s.step()
			}
			b.ReportMetric(float64(s.events)/float64(b.N), "events/frame")
		})
	}
}
