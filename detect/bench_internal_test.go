package detect

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkDecode decodes the table cases' outputs (one or two planted boxes on otherwise
// empty tensors): the cost of scanning each layout.
func BenchmarkDecode(b *testing.B) {
	for _, tc := range decodeCases() {
		b.Run(tc.name, func(b *testing.B) {
			outs := tc.build()
			d, err := NewDecoder(tc.family, infos(outs), tc.params)
			if err != nil {
				b.Fatal(err)
			}
			dst := d.Decode(outs, 0, tc.tr, nil)
			b.ReportAllocs()
			for b.Loop() {
				dst = d.Decode(outs, 0, tc.tr, dst[:0])
			}
		})
	}
}

// BenchmarkNMS suppresses n random boxes of 10 classes, clustered so that many overlap.
func BenchmarkNMS(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			dets := make([]Detection, n)
			for i := range dets {
				cx, cy := float32(r.IntN(8))*50+r.Float32()*10, float32(r.IntN(8))*50+r.Float32()*10
				dets[i] = Detection{ClassID: r.IntN(10), Score: r.Float32(), Box: [4]float32{cx - 20, cy - 20, cx + 20, cy + 20}}
			}
			work := make([]Detection, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(work, dets)
				NMS(work, 0.45, true)
			}
		})
	}
}
