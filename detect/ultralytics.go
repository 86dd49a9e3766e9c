package detect

import (
	"fmt"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// --- YOLOv5 (Ultralytics export: [N, 3·Σ(H/s)(W/s), 5+C]) ---------------------------------

type yolov5 struct {
	p          Params
	rows, cols int
}

func newYOLOv5(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) < 1 || len(outs[0].Shape) != 3 || outs[0].Shape[2] < 6 {
		return nil, fmt.Errorf("detect: yolov5 wants an output [N,A,5+C]")
	}
	return &yolov5{p: p, rows: int(outs[0].Shape[1]), cols: int(outs[0].Shape[2])}, nil
}

func (d *yolov5) Classes() int { return d.cols - 5 }

// Decode: rows are cx,cy,w,h in input pixels, objectness, class probabilities; score = obj·cls.
func (d *yolov5) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	data := outs[0].Data[b*d.rows*d.cols : (b+1)*d.rows*d.cols]
	start := len(dst)
	for r := 0; r < d.rows; r++ {
		row := data[r*d.cols : (r+1)*d.cols]
		if row[4] < d.p.ScoreThreshold {
			continue
		}
		c, best := argmax(row[5:])
		if s := row[4] * best; s >= d.p.ScoreThreshold {
			dst = append(dst, Detection{ClassID: c, Score: s, Box: cxcywh(row[0], row[1], row[2], row[3])})
		}
	}
	return d.p.finish(dst, start, tr)
}

func cxcywh(cx, cy, w, h float32) [4]float32 {
	return [4]float32{cx - w/2, cy - h/2, cx + w/2, cy + h/2}
}

// --- YOLOv8 / YOLO11 (Ultralytics export: [N, 4+C, A]) -------------------------------------

type yolov8 struct {
	p          Params
	feats, num int // 4+C, anchors
}

func newYOLOv8(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) < 1 || len(outs[0].Shape) != 3 || outs[0].Shape[1] < 5 {
		return nil, fmt.Errorf("detect: yolov8 wants an output [N,4+C,A]")
	}
	return &yolov8{p: p, feats: int(outs[0].Shape[1]), num: int(outs[0].Shape[2])}, nil
}

func (d *yolov8) Classes() int { return d.feats - 4 }

// Decode: anchor a's features are column a: cx,cy,w,h in input pixels then class scores.
func (d *yolov8) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	data := outs[0].Data[b*d.feats*d.num : (b+1)*d.feats*d.num]
	start := len(dst)
	for a := 0; a < d.num; a++ {
		bc, best := 0, data[4*d.num+a]
		for c := 5; c < d.feats; c++ {
			if v := data[c*d.num+a]; v > best {
				bc, best = c-4, v
			}
		}
		if best < d.p.ScoreThreshold {
			continue
		}
		dst = append(dst, Detection{ClassID: bc, Score: best,
			Box: cxcywh(data[a], data[d.num+a], data[2*d.num+a], data[3*d.num+a])})
	}
	return d.p.finish(dst, start, tr)
}
