package model

import (
	"bytes"
	"embed"
	"fmt"
	"slices"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
)

// probePictures are the load check's real pictures: darknet's data/dog.jpg and
// data/person.jpg (public domain; model/probe/SOURCE.md), scaled to 416 pixels wide. A
// synthetic picture gives a detector no objects, so its detections cannot show what float16
// does to scores near a threshold.
//
//go:embed probe/dog.jpg probe/person.jpg
var probePictures embed.FS

// probeThreshold caps the score threshold the detection check decodes at, so that a model
// with a high threshold still shows candidates: 0.1.
const probeThreshold = 0.1

// probeMaxScore bounds the largest score difference of a matched pair on the probe pictures:
// a quarter of AgreeScore, because 43 boxes show less than a clip's hundreds do. YOLOX-Nano,
// emulated on the CPU (docs/models.md): every layer float16, 0.010 on the probe and 0.073 on
// car-detection.mp4; the first quarter float32, 0.002 and 0.005.
const probeMaxScore = AgreeScore / 4

// probeMinShare is the share of the float32 detections the float16 rewrite must match on the
// probe pictures (and the other way round): issue 28's 99 %.
const probeMinShare = 0.99

// compareDetections runs the probe pictures through both sessions (batches of up to n, m's
// preprocessing on the CPU) and matches their detections by Agreement's rule, decoded at a
// threshold t of min(the model's, probeThreshold): each side's detections scoring at least t
// must find the other's among those scoring at least t − AgreeScore, so that a score crossing
// t by less than AgreeScore is no miss. It returns what it found, or an error wrapping
// errFP16Mismatch when fewer than probeMinShare match either way or a matched pair's scores
// differ by more than probeMaxScore. A model that is not a
// detector, or takes channels-last input, is not checked this way ("").
func compareDetections(m *Model, s32, s16 *infer.Session, n int) (string, error) {
	if m.Kind != attr.KindDetect || m.NHWC || n < 1 {
		return "", nil
	}
	t := min(m.Post.ScoreThreshold, probeThreshold)
	p := m.Post
	p.ScoreThreshold = max(t-AgreeScore, 0.005)
	pre, err := preprocess.NewCPU(m.Pre)
	if err != nil {
		return "", err
	}
	defer pre.Close()
	frames, err := probeFrames()
	if err != nil {
		return "", err
	}
	var trs []preprocess.Transform
	var d32, d16 [][]detect.Detection
	for start := 0; start < len(frames); start += n {
		k := min(n, len(frames)-start)
		for _, s := range []*infer.Session{s32, s16} {
			in, err := s.Input(k)
			if err != nil {
				return "", err
			}
			per := len(in) / k
			for i := range k {
				tr, err := pre.Run(frames[start+i], in[i*per:(i+1)*per])
				if err != nil {
					return "", err
				}
				if s == s32 {
					trs = append(trs, tr)
				}
			}
			outs, err := s.Run(k)
			if err != nil {
				if s == s16 {
					return "", fmt.Errorf("%w: it does not run: %v", errFP16Mismatch, err)
				}
				return "", fmt.Errorf("the float32 model does not run the probe pictures: %w", err)
			}
			dec, err := detect.NewDecoder(m.Family, s.Outputs(), p)
			if err != nil {
				return "", err
			}
			for i := range k {
				ds := dec.Decode(outs, i, trs[start+i], nil)
				if s == s32 {
					d32 = append(d32, ds)
				} else {
					d16 = append(d16, ds)
				}
			}
		}
	}
	above := func(ds []detect.Detection) []detect.Detection {
		return slices.DeleteFunc(slices.Clone(ds), func(d detect.Detection) bool { return d.Score < t })
	}
	var fwd, back Agreement
	for i := range d32 {
		fwd.Add(above(d32[i]), d16[i])
		back.Add(above(d16[i]), d32[i])
	}
	if fwd.Share() < probeMinShare || back.Share() < probeMinShare {
		return "", fmt.Errorf("%w: detections (score ≥ %.2g) on the probe pictures: %d of float32's %d matched in float16, %d of float16's %d in float32 (worst score difference %.3f)",
			errFP16Mismatch, t, fwd.Matched, fwd.Boxes, back.Matched, back.Boxes, max(fwd.WorstScore, back.WorstScore))
	}
	if worst := max(fwd.WorstScore, back.WorstScore); worst > probeMaxScore {
		return "", fmt.Errorf("%w: detections (score ≥ %.2g) on the probe pictures: a score differs by %.3f (> %.3g; %d of %d matched)",
			errFP16Mismatch, t, worst, probeMaxScore, fwd.Matched, fwd.Boxes)
	}
	return fmt.Sprintf("%d of %d detections (score ≥ %.2g) matched, worst score difference %.3f",
		fwd.Matched, fwd.Boxes, t, max(fwd.WorstScore, back.WorstScore)), nil
}

// probeFrames returns the probe pictures as BGR frames, each whole, mirrored, and its central
// 60 % (mirrored too): 8 frames whose objects meet the model at other places and scales.
func probeFrames() ([]*frame.Frame, error) {
	var out []*frame.Frame
	for _, name := range []string{"probe/dog.jpg", "probe/person.jpg"} {
		b, err := probePictures.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := imageio.Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("probe picture %s: %w", name, err)
		}
		if f.Format != frame.FormatBGR24 {
			return nil, fmt.Errorf("probe picture %s: %v, want bgr24", name, f.Format)
		}
		c := &frame.Frame{Format: f.Format, Width: f.Width * 6 / 10, Height: f.Height * 6 / 10, Device: -1}
		x0, y0 := (f.Width-c.Width)/2, (f.Height-c.Height)/2
		c.Planes[0], c.Strides[0] = f.Planes[0][y0*f.Strides[0]+3*x0:], f.Strides[0]
		out = append(out, f, mirrored(f), c, mirrored(c))
	}
	return out, nil
}

// mirrored returns a copy of the packed 3-byte-per-pixel frame f flipped left to right.
func mirrored(f *frame.Frame) *frame.Frame {
	m := &frame.Frame{Format: f.Format, Width: f.Width, Height: f.Height, Device: -1}
	m.Planes[0], m.Strides[0] = make([]byte, 3*f.Width*f.Height), 3*f.Width
	for y := range f.Height {
		src, dst := f.Planes[0][y*f.Strides[0]:], m.Planes[0][y*m.Strides[0]:]
		for x := range f.Width {
			copy(dst[3*(f.Width-1-x):3*(f.Width-x)], src[3*x:3*x+3])
		}
	}
	return m
}
