package detect

import (
	"math"
	"strconv"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// decodeCase is a hand-made model output with known detections, for one family. The cases are
// shared by the unit tests, the allocation test, the fuzz targets (as seeds) and benchmarks.
type decodeCase struct {
	name   string
	family Family
	params Params
	// build returns the outputs (batch 1 unless the case says otherwise).
	build func() []tensor.Tensor
	tr    preprocess.Transform
	want  []Detection // Label unchecked when empty
}

func newTensor(name string, shape ...int64) tensor.Tensor {
	return tensor.Tensor{Info: tensor.Info{Name: name, Shape: shape, Type: "float32"}, Data: make([]float32, tensor.Elements(shape))}
}

func fill(t tensor.Tensor, v float32) tensor.Tensor {
	for i := range t.Data {
		t.Data[i] = v
	}
	return t
}

func infos(ts []tensor.Tensor) []tensor.Info {
	in := make([]tensor.Info, len(ts))
	for i, t := range ts {
		in[i] = t.Info
	}
	return in
}

func logit(p float64) float32 { return float32(math.Log(p / (1 - p))) }

func params(f Family, w, h int) Params {
	p := DefaultParams(f)
	p.InputWidth, p.InputHeight = w, h
	return p
}

// oneHot writes bins logits so that their softmax expectation is (very nearly) bin j.
func oneHot(dst []float32, j int) {
	for i := range dst {
		dst[i] = -20
	}
	dst[j] = 20
}

func decodeCases() []decodeCase {
	return []decodeCase{
		{
			// Stride 16, cell (5,7): cx = (0.5+5)·16 = 88, cy = (0.25+7)·16 = 116, w = 4·16,
			// h = 2·16. A weaker dog on the same spot (from the next cell) is suppressed; a cat
			// there stays (class-aware NMS).
			name: "yolox", family: FamilyYOLOX, params: params(FamilyYOLOX, 416, 416),
			build: func() []tensor.Tensor {
				t := newTensor("output", 1, 3549, 85)
				put := func(r int, o0, o1, o2, o3, obj float32, c int, p float32) {
					row := t.Data[r*85 : (r+1)*85]
					copy(row, []float32{o0, o1, o2, o3, obj})
					row[5+c] = p
				}
				r := 52*52 + 7*26 + 5
				put(r, 0.5, 0.25, float32(math.Log(4)), float32(math.Log(2)), 0.9, 16, 0.95)
				put(r+1, -0.5, 0.25, float32(math.Log(4)), float32(math.Log(2)), 0.8, 16, 0.9) // same box
				put(r+26, 0.5, -0.75, float32(math.Log(4)), float32(math.Log(2)), 0.7, 15, 0.9)
				put(10, 0.5, 0.5, 0, 0, 0.29, 0, 1) // below the threshold
				return []tensor.Tensor{t}
			},
			want: []Detection{
				{ClassID: 16, Label: "dog", Score: 0.855, Box: [4]float32{56, 100, 120, 132}},
				{ClassID: 15, Label: "cat", Score: 0.63, Box: [4]float32{56, 100, 120, 132}},
			},
		},
		{
			// Same box seen through a YOLOX letterbox of a 832×624 frame (r = 0.5).
			name: "yolox/letterbox", family: FamilyYOLOX, params: params(FamilyYOLOX, 416, 416),
			build: func() []tensor.Tensor {
				t := newTensor("output", 1, 3549, 85)
				row := t.Data[(52*52+7*26+5)*85:]
				copy(row, []float32{0.5, 0.25, float32(math.Log(4)), float32(math.Log(2)), 0.9})
				row[5+16] = 0.95
				return []tensor.Tensor{t}
			},
			tr:   preprocess.Transform{ScaleX: 0.5, ScaleY: 0.5, SrcWidth: 832, SrcHeight: 624},
			want: []Detection{{ClassID: 16, Label: "dog", Score: 0.855, Box: [4]float32{112, 200, 240, 264}}},
		},
		{
			// 22×22 grid of a 352 input, cell (3,4): cx = (3+0.5)/22·352 = 56,
			// cy = (4−0.25)/22·352 = 60, w = h = 0.25·352 = 88.
			name: "fastestdet", family: FamilyFastestDet, params: params(FamilyFastestDet, 352, 352),
			build: func() []tensor.Tensor {
				t := newTensor("758", 1, 85, 22, 22)
				i := 4*22 + 3
				set := func(ch int, v float32) { t.Data[ch*484+i] = v }
				set(0, 0.9)
				set(1, float32(math.Atanh(0.5)))
				set(2, float32(math.Atanh(-0.25)))
				set(3, logit(0.25))
				set(4, logit(0.25))
				set(5+2, 0.8)
				set(5+3, 0.2)
				return []tensor.Tensor{t}
			},
			want: []Detection{{ClassID: 2, Label: "car", Score: float32(math.Pow(0.9, 0.6) * math.Pow(0.8, 0.4)), Box: [4]float32{12, 16, 100, 104}}},
		},
		{
			// Prior 100 is a face at [0.1,0.2,0.3,0.5] of a 320×240 input; the stretch from a
			// 640×480 frame doubles it.
			name: "ultraface", family: FamilyUltraFace, params: params(FamilyUltraFace, 320, 240),
			build: func() []tensor.Tensor {
				s := newTensor("scores", 1, 4420, 2)
				b := newTensor("boxes", 1, 4420, 4)
				for i := 0; i < 4420; i++ {
					s.Data[2*i] = 1
				}
				copy(s.Data[200:], []float32{0.05, 0.95})
				copy(s.Data[202:], []float32{0.35, 0.65}) // prior 101 below 0.7
				copy(b.Data[400:], []float32{0.1, 0.2, 0.3, 0.5})
				copy(b.Data[404:], []float32{0.1, 0.2, 0.3, 0.5})
				return []tensor.Tensor{s, b}
			},
			tr:   preprocess.Transform{ScaleX: 0.5, ScaleY: 0.5, SrcWidth: 640, SrcHeight: 480},
			want: []Detection{{ClassID: 0, Label: "face", Score: 0.95, Box: [4]float32{64, 96, 192, 240}}},
		},
		{
			name: "yolov5", family: FamilyYOLOv5, params: params(FamilyYOLOv5, 640, 640),
			build: func() []tensor.Tensor {
				t := newTensor("output0", 1, 25200, 85)
				row := t.Data[1000*85:]
				copy(row, []float32{320, 240, 100, 50, 0.8})
				row[5] = 0.9
				row = t.Data[1001*85:] // objectness high, class low
				copy(row, []float32{100, 100, 10, 10, 0.9})
				row[5] = 0.2
				return []tensor.Tensor{t}
			},
			want: []Detection{{ClassID: 0, Label: "person", Score: 0.72, Box: [4]float32{270, 215, 370, 265}}},
		},
		{
			name: "yolov5/raw-heads-4d", family: FamilyYOLOv5, params: params(FamilyYOLOv5, 640, 640),
			build: func() []tensor.Tensor { return yolov5Raw(false) },
			want:  []Detection{{ClassID: 3, Label: "motorbike", Score: 0.72, Box: [4]float32{145, 149.375, 207, 250.625}}},
		},
		{
			name: "yolov5/raw-heads-5d", family: FamilyYOLOv5, params: params(FamilyYOLOv5, 640, 640),
			build: func() []tensor.Tensor { return yolov5Raw(true) },
			want:  []Detection{{ClassID: 3, Label: "motorbike", Score: 0.72, Box: [4]float32{145, 149.375, 207, 250.625}}},
		},
		{
			name: "yolov8", family: FamilyYOLOv8, params: params(FamilyYOLOv8, 640, 640),
			build: func() []tensor.Tensor {
				t := newTensor("output0", 1, 84, 8400)
				set := func(f, a int, v float32) { t.Data[f*8400+a] = v }
				for f, v := range []float32{100, 200, 40, 80} {
					set(f, 5000, v)
					set(f, 5001, v+2)
				}
				set(4+7, 5000, 0.9)
				set(4+2, 5000, 0.3)
				set(4+7, 5001, 0.5) // suppressed by 5000
				return []tensor.Tensor{t}
			},
			want: []Detection{{ClassID: 7, Label: "truck", Score: 0.9, Box: [4]float32{80, 160, 120, 240}}},
		},
		{
			// Stride 32 (rows from 52²+26² = 3380), cell (4,6): centre (128,192); sides
			// l,t,r,b = 2,1,3,4 bins of 32.
			name: "nanodet-plus", family: FamilyNanoDet, params: params(FamilyNanoDet, 416, 416),
			build: func() []tensor.Tensor {
				t := newTensor("output", 1, 3598, 112)
				row := t.Data[(3380+6*13+4)*112:][:112]
				row[0] = 0.8
				for k, j := range []int{2, 1, 3, 4} {
					oneHot(row[80+8*k:80+8*(k+1)], j)
				}
				return []tensor.Tensor{t}
			},
			want: []Detection{{ClassID: 0, Label: "person", Score: 0.8, Box: [4]float32{64, 160, 224, 320}}},
		},
		{
			// Stride 16 of a 320 input, cell (5,3): centre ((5+½)·16, (3+½)·16) = (88,56);
			// sides 1,2,1,2 bins of 16.
			name: "nanodet-legacy", family: FamilyNanoDet, params: params(FamilyNanoDet, 320, 320),
			build: func() []tensor.Tensor { return nanodetLegacy(8) },
			want:  []Detection{{ClassID: 2, Label: "car", Score: 0.7, Box: [4]float32{72, 24, 104, 88}}},
		},
		{
			// Rows as YOLOv10/YOLO26 end2end exports write them: final boxes, no NMS here (a car
			// and a truck on one box both stay); rows below the threshold, with a class the
			// labels cannot name or not a whole number, or a NaN score are dropped.
			name: "end2end", family: FamilyEndToEnd, params: params(FamilyEndToEnd, 640, 640),
			build: func() []tensor.Tensor {
				t := newTensor("output0", 1, 300, 6)
				for r, row := range [][6]float32{
					{100, 120, 200, 260, 0.9, 2},
					{100, 120, 200, 260, 0.8, 7},
					{300, 300, 310, 310, 0.1, 0},
					{10, 10, 50, 50, 0.95, 80},
					{10, 10, 50, 50, 0.95, 2.5},
					{10, 10, 50, 50, float32(math.NaN()), 1},
					{10, 10, 50, 50, 0.7, -1},
				} {
					copy(t.Data[6*r:], row[:])
				}
				return []tensor.Tensor{t}
			},
			want: []Detection{
				{ClassID: 2, Label: "car", Score: 0.9, Box: [4]float32{100, 120, 200, 260}},
				{ClassID: 7, Label: "truck", Score: 0.8, Box: [4]float32{100, 120, 200, 260}},
			},
		},
		{
			// The same car through a centred letterbox of a 1280×960 frame (r = 0.5, 80 px
			// bands above and below).
			name: "end2end/letterbox", family: FamilyEndToEnd, params: params(FamilyEndToEnd, 640, 640),
			build: func() []tensor.Tensor {
				t := newTensor("output0", 1, 300, 6)
				copy(t.Data, []float32{100, 120, 200, 260, 0.9, 2})
				return []tensor.Tensor{t}
			},
			tr:   preprocess.Transform{ScaleX: 0.5, ScaleY: 0.5, OffsetY: 80, SrcWidth: 1280, SrcHeight: 960},
			want: []Detection{{ClassID: 2, Label: "car", Score: 0.9, Box: [4]float32{200, 80, 400, 360}}},
		},
		{
			// Stride 16 of a 320 input, cell (5,3): centre ((5+½)·16, (3+½)·16) = (88,56); sides
			// 1,2,1,2 bins of 16. Outputs interleaved per level as PaddleDetection exports them.
			name: "picodet", family: FamilyPicoDet, params: params(FamilyPicoDet, 320, 320),
			build: func() []tensor.Tensor { return picoDet(false) },
			want:  []Detection{{ClassID: 2, Label: "car", Score: 0.7, Box: [4]float32{72, 24, 104, 88}}},
		},
		{
			name: "picodet/grouped", family: FamilyPicoDet, params: params(FamilyPicoDet, 320, 320),
			build: func() []tensor.Tensor { return picoDet(true) },
			want:  []Detection{{ClassID: 2, Label: "car", Score: 0.7, Box: [4]float32{72, 24, 104, 88}}},
		},
		{
			name: "nanodet-legacy/distances", family: FamilyNanoDet, params: params(FamilyNanoDet, 320, 320),
			build: func() []tensor.Tensor { return nanodetLegacy(1) },
			want:  []Detection{{ClassID: 2, Label: "car", Score: 0.7, Box: [4]float32{72, 24, 104, 88}}},
		},
	}
}

// yolov5Raw plants, in the stride-16 head (40×40) of a 640 input, anchor 1 (62,45) at cell
// (10,12): σ(tx) = 0.75 → cx = (1.0+10)·16 = 176, σ(ty) = 0.5 → cy = 200, σ(tw) = 0.5 → w = 62,
// σ(th) = 0.75 → h = 2.25·45 = 101.25; σ(obj) = 0.9, σ(cls 3) = 0.8. Other logits are −10.
// Outputs come in the order 32, 8, 16 to show that heads are matched by size.
func yolov5Raw(fiveD bool) []tensor.Tensor {
	var outs []tensor.Tensor
	for _, s := range []int{32, 8, 16} {
		g := int64(640 / s)
		var t tensor.Tensor
		if fiveD {
			t = fill(newTensor("head_s"+strconv.Itoa(s), 1, 3, g, g, 85), -10)
		} else {
			t = fill(newTensor("head_s"+strconv.Itoa(s), 1, 255, g, g), -10)
		}
		if s == 16 {
			vals := []float32{logit(0.75), 0, 0, logit(0.75), logit(0.9)}
			at := func(k int) int {
				cell := 12*40 + 10
				if fiveD {
					return (1*1600+cell)*85 + k
				}
				return (1*85+k)*1600 + cell
			}
			for k, v := range vals {
				t.Data[at(k)] = v
			}
			t.Data[at(5+3)] = logit(0.8)
		}
		outs = append(outs, t)
	}
	return outs
}

// nanodetLegacy builds the six outputs of a legacy NanoDet at 320×320, in the export's order
// (cls 8,16,32 then dis 8,16,32); bins is 8 (distributions) or 1 (distances in the graph).
func nanodetLegacy(bins int) []tensor.Tensor {
	var cls, dis []tensor.Tensor
	for _, s := range []int{8, 16, 32} {
		n := int64((320 / s) * (320 / s))
		c := newTensor("cls_pred_stride_"+strconv.Itoa(s), 1, n, 80)
		d := newTensor("dis_pred_stride_"+strconv.Itoa(s), 1, n, int64(4*bins))
		if s == 16 {
			i := 3*20 + 5
			c.Data[i*80+2] = 0.7
			q := d.Data[i*4*bins : (i+1)*4*bins]
			for k, j := range []int{1, 2, 1, 2} {
				if bins == 1 {
					q[k] = float32(j)
				} else {
					oneHot(q[k*bins:(k+1)*bins], j)
				}
			}
		}
		cls, dis = append(cls, c), append(dis, d)
	}
	return append(cls, dis...)
}

// picoDet builds the eight outputs of a PicoDet at 320×320 (strides 8,16,32,64): per level
// scores [1,A,80] and distributions [1,A,32], interleaved (transpose_0.tmp_0 scores of stride 8,
// transpose_1.tmp_0 its distributions, …) or grouped (every level's scores, then every level's
// distributions). Stride 16, cell (5,3) holds a car at 0.7, sides 1,2,1,2 bins;
// other scores are 0.
func picoDet(grouped bool) []tensor.Tensor {
	var cls, dis []tensor.Tensor
	for _, s := range []int{8, 16, 32, 64} {
		n := int64(ceilDiv(320, s) * ceilDiv(320, s))
		c := newTensor("", 1, n, 80)
		d := newTensor("", 1, n, 32)
		if s == 16 {
			for _, p := range []struct {
				cell, class int
				score       float32
			}{{3*20 + 5, 2, 0.7}} {
				c.Data[p.cell*80+p.class] = p.score
				q := d.Data[p.cell*32 : (p.cell+1)*32]
				for k, j := range []int{1, 2, 1, 2} {
					oneHot(q[k*8:(k+1)*8], j)
				}
			}
		}
		cls, dis = append(cls, c), append(dis, d)
	}
	var outs []tensor.Tensor
	if grouped {
		outs = append(cls, dis...)
	} else {
		for i := range cls {
			outs = append(outs, cls[i], dis[i])
		}
	}
	for i := range outs {
		outs[i].Name = "transpose_" + strconv.Itoa(i) + ".tmp_0"
	}
	return outs
}
