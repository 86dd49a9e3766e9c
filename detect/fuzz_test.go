package detect

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// checkOutput asserts what every Decode result must satisfy, whatever the model produced.
func checkOutput(t *testing.T, d Decoder, p Params, got []Detection) {
	t.Helper()
	if len(got) > max(p.MaxDetections, 300) {
		t.Fatalf("%d detections", len(got))
	}
	for i, g := range got {
		if g.ClassID < 0 || g.ClassID >= d.Classes() || g.Label == "" {
			t.Fatalf("detection %d: class %d label %q of %d classes", i, g.ClassID, g.Label, d.Classes())
		}
		if !finite(g.Score) || g.Score < p.ScoreThreshold || (i > 0 && g.Score > got[i-1].Score) {
			t.Fatalf("detection %d: score %v (threshold %v, previous %v)", i, g.Score, p.ScoreThreshold, got[max(i-1, 0)].Score)
		}
		b := g.Box
		if !finite(b[0]) || !finite(b[1]) || !finite(b[2]) || !finite(b[3]) || b[2] < b[0] || b[3] < b[1] {
			t.Fatalf("detection %d: box %v", i, b)
		}
	}
}

// FuzzDecode decodes the table cases' outputs with values overwritten by the fuzzer (NaN, ±Inf,
// huge, negative: 8-byte records of position and float32 bits), a fuzzed score threshold, and
// optionally the first output cut short. Decode must not panic and its result must be sane.
func FuzzDecode(f *testing.F) {
	cases := decodeCases()
	for i := range cases {
		f.Add(uint8(i), uint8(0), uint16(0), []byte(nil))
		rec := make([]byte, 0, 48)
		for k, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), -1e30, 1e30, 0.99, 1} {
			rec = binary.LittleEndian.AppendUint32(rec, uint32(k*7919))
			rec = binary.LittleEndian.AppendUint32(rec, math.Float32bits(v))
		}
		f.Add(uint8(i), uint8(1), uint16(0), rec)
		f.Add(uint8(i), uint8(200), uint16(30000), rec)
	}
	built := make([][]tensor.Tensor, len(cases))
	f.Fuzz(func(t *testing.T, which, thr uint8, cut uint16, edits []byte) {
		i := int(which) % len(cases)
		tc := cases[i]
		if built[i] == nil {
			built[i] = tc.build()
		}
		outs := built[i]
		type undo struct {
			out, pos int
			v        float32
		}
		var undos []undo
		defer func() {
			for k := len(undos) - 1; k >= 0; k-- {
				u := undos[k]
				outs[u.out].Data[u.pos] = u.v
			}
		}()
		for ; len(edits) >= 8; edits = edits[8:] {
			idx := int(binary.LittleEndian.Uint32(edits))
			o := idx % len(outs)
			pos := idx / len(outs) % len(outs[o].Data)
			undos = append(undos, undo{o, pos, outs[o].Data[pos]})
			outs[o].Data[pos] = math.Float32frombits(binary.LittleEndian.Uint32(edits[4:]))
		}
		p := tc.params
		p.ScoreThreshold = float32(thr) / 255
		d, err := NewDecoder(tc.family, infos(outs), p)
		if err != nil {
			t.Fatal(err)
		}
		p, _ = p.resolve(tc.family)
		run := outs
		if cut > 0 {
			run = append([]tensor.Tensor(nil), outs...)
			run[0].Data = run[0].Data[:len(run[0].Data)*int(cut)/65536]
		}
		tr := tc.tr
		if thr%2 == 1 {
			tr = preprocess.Transform{ScaleX: 0.3, ScaleY: 2, OffsetX: 7, OffsetY: -3, SrcWidth: 1000, SrcHeight: 100}
		}
		checkOutput(t, d, p, d.Decode(run, 0, tr, nil))
	})
}

// fuzzNames are output names the layouts look for.
var fuzzNames = []string{"output", "output0", "scores", "boxes", "cls_pred_stride_8", "cls_pred_stride_16",
	"cls_pred_stride_32", "dis_pred_stride_8", "dis_pred_stride_16", "dis_pred_stride_32", "x"}

// encodeShapes writes outputs as the FuzzLayout input: per output a name index, a rank and
// rank little-endian uint16 dimensions (0xffff = dynamic).
func encodeShapes(outs []tensor.Info) []byte {
	var b []byte
	for _, o := range outs {
		n := 10
		for i, name := range fuzzNames {
			if name == o.Name {
				n = i
			}
		}
		b = append(b, byte(n), byte(len(o.Shape)))
		for _, d := range o.Shape {
			if d < 0 {
				d = 0xffff
			}
			b = binary.LittleEndian.AppendUint16(b, uint16(d))
		}
	}
	return b
}

func decodeShapes(b []byte) []tensor.Info {
	var outs []tensor.Info
	for len(b) >= 2 && len(outs) < 8 {
		o := tensor.Info{Name: fuzzNames[int(b[0])%len(fuzzNames)]}
		rank := int(b[1]) % 6
		b = b[2:]
		for ; rank > 0 && len(b) >= 2; rank-- {
			d := int64(binary.LittleEndian.Uint16(b))
			if d == 0xffff {
				d = -1
			}
			o.Shape = append(o.Shape, d)
			b = b[2:]
		}
		outs = append(outs, o)
	}
	return outs
}

// FuzzLayout builds decoders for fuzzed output shapes and input sizes (seeded with the table
// cases' layouts). DetectFamily and NewDecoder must not panic; a decoder they accept must
// decode tensors of the declared shapes (batch 1, dynamic dimensions 1) without panicking.
func FuzzLayout(f *testing.F) {
	for _, tc := range decodeCases() {
		f.Add(uint8(0), uint16(tc.params.InputWidth), uint16(tc.params.InputHeight), encodeShapes(infos(tc.build())))
	}
	f.Fuzz(func(t *testing.T, fam uint8, w, h uint16, shapes []byte) {
		outs := decodeShapes(shapes)
		in := []tensor.Info{{Name: "images", Shape: []int64{1, 3, int64(h), int64(w)}}}
		family, err := DetectFamily(in, outs)
		if err != nil {
			family = Families[int(fam)%len(Families)]
		}
		p := Params{InputWidth: int(w), InputHeight: int(h), Labels: nil}
		d, err := NewDecoder(family, outs, p)
		if err != nil {
			return
		}
		ts := make([]tensor.Tensor, len(outs))
		total := 0
		for i, o := range outs {
			shape := append([]int64(nil), o.Shape...)
			n := 1
			for k := range shape {
				if shape[k] < 0 {
					shape[k] = 1
				}
				n *= int(shape[k])
				if n > 1<<22 {
					t.Skip("outputs too large")
				}
			}
			total += n
			if total > 1<<22 {
				t.Skip("outputs too large")
			}
			ts[i] = tensor.Tensor{Info: tensor.Info{Name: o.Name, Shape: shape}, Data: make([]float32, n)}
			for k := range ts[i].Data {
				ts[i].Data[k] = float32((k*2654435761)%1000) / 999 // 0…1, deterministic
			}
		}
		rp, _ := p.resolve(family)
		checkOutput(t, d, rp, d.Decode(ts, 0, preprocess.Transform{}, nil))
	})
}

// FuzzNMS checks NMS on fuzzed boxes (21-byte records: class, score, x1, y1, x2, y2), seeded
// with the NMS table: no pair of kept boxes (of one class when class-aware) overlaps by more
// than iou, and the result is sorted by score.
func FuzzNMS(f *testing.F) {
	for _, tc := range nmsCases {
		var b []byte
		for _, d := range tc.dets {
			b = append(b, byte(d.ClassID))
			for _, v := range []float32{d.Score, d.Box[0], d.Box[1], d.Box[2], d.Box[3]} {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		}
		f.Add(b, tc.iou, tc.classAware)
	}
	f.Fuzz(func(t *testing.T, b []byte, iou float32, classAware bool) {
		var dets []Detection
		for ; len(b) >= 21; b = b[21:] {
			d := Detection{ClassID: int(b[0] % 4)}
			v := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[1+4*i:])) }
			d.Score = v(0)
			d.Box = [4]float32{v(1), v(2), v(3), v(4)}
			dets = append(dets, d)
		}
		n := len(dets)
		kept := NMS(dets, iou, classAware)
		if len(kept) > n {
			t.Fatalf("%d kept of %d", len(kept), n)
		}
		for i := range kept {
			if i > 0 && kept[i].Score > kept[i-1].Score {
				t.Fatalf("not sorted: %v after %v", kept[i].Score, kept[i-1].Score)
			}
			for j := range i {
				if classAware && kept[i].ClassID != kept[j].ClassID {
					continue
				}
				if o := IoU(kept[i].Box, kept[j].Box); o > iou {
					t.Fatalf("kept %v and %v overlap by %v > %v", kept[j], kept[i], o, iou)
				}
			}
		}
	})
}
