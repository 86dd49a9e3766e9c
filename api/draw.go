package api

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"strconv"
	"sync"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/vinfer/vinfer/frame"
)

// errDeviceFrame is returned for frames in GPU memory: copy them first (frame.ToHost).
var errDeviceFrame = errors.New("the frame is in GPU memory: convert a host copy (frame.ToHost)")

// toRGBA converts a host frame to RGBA, reusing dst when it has the output's size, taking every
// step-th pixel of every step-th row (step ≥ 1; the output is ⌈w/step⌉×⌈h/step⌉, so a large
// frame is never held at full size). YUV frames use the BT.601 matrix, limited range (16–235)
// unless the frame is marked full range, with 4:2:0 chroma taken from the co-sited sample
// (nearest; fine for a preview).
func toRGBA(f *frame.Frame, dst *image.RGBA, step int) (*image.RGBA, error) {
	if f.OnDevice() || f.Planes[0] == nil {
		return nil, errDeviceFrame
	}
	w, h := f.Width, f.Height
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("frame has no size (%dx%d)", w, h)
	}
	step = max(step, 1)
	ow, oh := (w+step-1)/step, (h+step-1)/step
	need := func(p, rows, rowBytes int) error {
		if f.Strides[p] < rowBytes || len(f.Planes[p]) < (rows-1)*f.Strides[p]+rowBytes {
			return fmt.Errorf("%s frame %dx%d: plane %d holds %d bytes with stride %d, too few", f.Format, w, h, p, len(f.Planes[p]), f.Strides[p])
		}
		return nil
	}
	cw, ch := (w+1)/2, (h+1)/2
	var err error
	switch f.Format {
	case frame.FormatI420:
		err = errors.Join(need(0, h, w), need(1, ch, cw), need(2, ch, cw))
	case frame.FormatNV12:
		err = errors.Join(need(0, h, w), need(1, ch, 2*cw))
	case frame.FormatBGR24, frame.FormatRGB24:
		err = need(0, h, 3*w)
	default:
		err = fmt.Errorf("cannot draw frames of format %s", f.Format)
	}
	if err != nil {
		return nil, err
	}
	if dst == nil || dst.Rect.Dx() != ow || dst.Rect.Dy() != oh {
		dst = image.NewRGBA(image.Rect(0, 0, ow, oh))
	}
	r, b := 0, 2
	if f.Format == frame.FormatBGR24 {
		r, b = 2, 0
	}
	for oy := 0; oy < oh; oy++ {
		y := oy * step
		out := dst.Pix[oy*dst.Stride:]
		switch f.Format {
		case frame.FormatI420:
			yr := f.Planes[0][y*f.Strides[0]:]
			ur := f.Planes[1][(y/2)*f.Strides[1]:]
			vr := f.Planes[2][(y/2)*f.Strides[2]:]
			for ox := 0; ox < ow; ox++ {
				x := ox * step
				yuvToRGB(out[4*ox:4*ox+4], yr[x], ur[x/2], vr[x/2], f.FullRange)
			}
		case frame.FormatNV12:
			yr := f.Planes[0][y*f.Strides[0]:]
			uv := f.Planes[1][(y/2)*f.Strides[1]:]
			for ox := 0; ox < ow; ox++ {
				x := ox * step
				yuvToRGB(out[4*ox:4*ox+4], yr[x], uv[x&^1], uv[x|1], f.FullRange)
			}
		default:
			in := f.Planes[0][y*f.Strides[0]:]
			for ox := 0; ox < ow; ox++ {
				x := ox * step
				out[4*ox], out[4*ox+1], out[4*ox+2], out[4*ox+3] = in[3*x+r], in[3*x+1], in[3*x+b], 0xff
			}
		}
	}
	return dst, nil
}

// yuvToRGB writes one RGBA pixel from BT.601 YCbCr in 16.16 fixed point (ITU-R BT.601-7 §2.5).
func yuvToRGB(out []byte, y, u, v uint8, full bool) {
	var yy int32
	if full {
		yy = int32(y) << 16
	} else {
		yy = (int32(y) - 16) * 76309 // 255/219
	}
	d, e := int32(u)-128, int32(v)-128
	var r, g, b int32
	if full {
		r = yy + 91881*e
		g = yy - 22554*d - 46802*e
		b = yy + 116130*d
	} else { // chroma scaled by 255/224 as well
		r = yy + 104597*e
		g = yy - 25675*d - 53279*e
		b = yy + 132201*d
	}
	out[0], out[1], out[2], out[3] = clamp8(r), clamp8(g), clamp8(b), 0xff
}

func clamp8(v int32) uint8 {
	v = (v + 1<<15) >> 16
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// scaleTo returns src resized to width pixels (height keeping the aspect ratio) with bilinear
// filtering, or src itself when width is 0 or not smaller.
func scaleTo(src *image.RGBA, width int) *image.RGBA {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	if width <= 0 || width >= w {
		return src
	}
	nh := max(1, h*width/w)
	dst := image.NewRGBA(image.Rect(0, 0, width, nh))
	xdraw.ApproxBiLinear.Scale(dst, dst.Rect, src, src.Rect, xdraw.Src, nil)
	return dst
}

// palette gives each class a distinct, saturated color (readable on video and under white or
// near-black text).
var palette = []color.RGBA{
	{0x4c, 0xc9, 0xf0, 0xff}, {0xf7, 0x25, 0x85, 0xff}, {0x7b, 0xe0, 0x6a, 0xff}, {0xff, 0xb7, 0x03, 0xff},
	{0xb5, 0x8c, 0xff, 0xff}, {0xff, 0x70, 0x43, 0xff}, {0x06, 0xd6, 0xa0, 0xff}, {0xef, 0x47, 0x6f, 0xff},
	{0x3a, 0x86, 0xff, 0xff}, {0xe9, 0xff, 0x70, 0xff}, {0xff, 0x99, 0xc8, 0xff}, {0x8e, 0xec, 0xf5, 0xff},
}

// classColor returns a class id's color.
func classColor(id int) color.RGBA {
	if id < 0 {
		id = -id
	}
	return palette[id%len(palette)]
}

var (
	fontOnce sync.Once
	labelFnt *opentype.Font
	fontErr  error
)

// labelFace returns a face for labels of the given pixel size. Faces are not safe for
// concurrent use: each drawing makes its own (cheap; the parsed font is shared).
func labelFace(px float64) (font.Face, error) {
	fontOnce.Do(func() { labelFnt, fontErr = opentype.Parse(gobold.TTF) })
	if fontErr != nil {
		return nil, fontErr
	}
	return opentype.NewFace(labelFnt, &opentype.FaceOptions{Size: px, DPI: 72, Hinting: font.HintingFull})
}

// drawResult draws the detections of ev, scaled by k (image pixels per frame pixel), as boxes
// with "label 87%" tags, and a caption with the stream, frame index and time.
func drawResult(img *image.RGBA, ev *event, k float64, caption string) error {
	w := img.Rect.Dx()
	px := min(max(float64(w)/52, 11), 26)
	face, err := labelFace(px)
	if err != nil {
		return err
	}
	defer face.Close()
	thick := max(2, int(float64(w)/320+0.5))
	if ev != nil {
		for i := range ev.Detections {
			d := &ev.Detections[i]
			c := classColor(d.ClassID)
			r := image.Rect(int(float64(d.Box[0])*k+0.5), int(float64(d.Box[1])*k+0.5),
				int(float64(d.Box[2])*k+0.5), int(float64(d.Box[3])*k+0.5)).Intersect(img.Rect)
			if r.Empty() {
				continue
			}
			strokeRect(img, r, thick, c)
			tag := d.Label + " " + strconv.Itoa(int(d.Score*100+0.5)) + "%"
			tw := font.MeasureString(face, tag).Ceil()
			m := face.Metrics()
			th := (m.Ascent + m.Descent).Ceil()
			pad := max(2, th/5)
			bg := image.Rect(r.Min.X, r.Min.Y-th-2*pad, r.Min.X+tw+2*pad, r.Min.Y)
			if bg.Min.Y < 0 { // no room above: put the tag inside the box
				bg = bg.Add(image.Pt(0, th+2*pad))
			}
			if bg.Max.X > img.Rect.Max.X {
				bg = bg.Add(image.Pt(img.Rect.Max.X-bg.Max.X, 0))
			}
			fillRect(img, bg, c)
			drawText(img, face, bg.Min.X+pad, bg.Min.Y+pad+m.Ascent.Ceil(), tag, textOn(c))
		}
	}
	if caption != "" {
		tw := font.MeasureString(face, caption).Ceil()
		m := face.Metrics()
		th := (m.Ascent + m.Descent).Ceil()
		pad := max(3, th/4)
		bg := image.Rect(0, img.Rect.Max.Y-th-2*pad, tw+2*pad, img.Rect.Max.Y)
		blendRect(img, bg, color.RGBA{0, 0, 0, 0x99})
		drawText(img, face, pad, bg.Min.Y+pad+m.Ascent.Ceil(), caption, color.RGBA{0xf2, 0xf4, 0xf8, 0xff})
	}
	return nil
}

// textOn picks near-black or white text for a background color (relative luminance).
func textOn(c color.RGBA) color.RGBA {
	if 299*int(c.R)+587*int(c.G)+114*int(c.B) > 140000 {
		return color.RGBA{0x0b, 0x0d, 0x12, 0xff}
	}
	return color.RGBA{0xff, 0xff, 0xff, 0xff}
}

func drawText(img *image.RGBA, face font.Face, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func fillRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := img.Pix[img.PixOffset(r.Min.X, y):]
		for x := 0; x < r.Dx(); x++ {
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, 0xff
		}
	}
}

// blendRect darkens or tints r with a translucent color (alpha over).
func blendRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Rect)
	a := uint32(c.A)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := img.Pix[img.PixOffset(r.Min.X, y):]
		for x := 0; x < r.Dx(); x++ {
			p := row[4*x : 4*x+3]
			p[0] = uint8((uint32(p[0])*(255-a) + uint32(c.R)*a) / 255)
			p[1] = uint8((uint32(p[1])*(255-a) + uint32(c.G)*a) / 255)
			p[2] = uint8((uint32(p[2])*(255-a) + uint32(c.B)*a) / 255)
		}
	}
}

// strokeRect draws r's outline, t pixels thick, inside r.
func strokeRect(img *image.RGBA, r image.Rectangle, t int, c color.RGBA) {
	t = min(t, r.Dx()/2+1, r.Dy()/2+1)
	fillRect(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+t), c)
	fillRect(img, image.Rect(r.Min.X, r.Max.Y-t, r.Max.X, r.Max.Y), c)
	fillRect(img, image.Rect(r.Min.X, r.Min.Y, r.Min.X+t, r.Max.Y), c)
	fillRect(img, image.Rect(r.Max.X-t, r.Min.Y, r.Max.X, r.Max.Y), c)
}
