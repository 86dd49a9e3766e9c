package evidence

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"slices"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// SnapshotQuality is the JPEG quality of snapshots.
const SnapshotQuality = 85

// shot is one of an event's snapshots: its own frame, or its track's best frame (best),
// as decoded and with the object's box drawn.
type shot struct {
	id           event.ID
	best         bool
	clean, boxed []byte
}

var errStop = errors.New("all snapshots taken")

// want is a frame to snapshot: the first decoded frame with PTS at or after pts.
type want struct {
	pts  time.Duration
	box  [4]float32
	ev   int // index in the clip's events
	best bool
}

// snapshots decodes units (a clip, from its key frame) up to the last frame wanted and
// encodes, for each event, its own frame (the first whose PTS is at or after the event's) and
// its track's best frame (clipEvent.best). A best frame shared by several events of a track
// is encoded once.
func (r *Recorder) snapshots(units []Unit, evs []clipEvent) ([]shot, error) {
	dec, err := r.NewDecoder(units[0].Codec)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	wants := make([]want, 0, 2*len(evs))
	for i := range evs {
		wants = append(wants, want{pts: evs[i].pts, box: evs[i].box, ev: i},
			want{pts: evs[i].best.pts, box: evs[i].best.box, ev: i, best: true})
	}
	slices.SortStableFunc(wants, func(a, b want) int { return cmp.Compare(a.pts, b.pts) })
	type key struct {
		pts time.Duration
		box [4]float32
	}
	done := map[key]shot{}
	var out []shot
	next := 0 // the first want not taken yet
	emit := func(f *frame.Frame) error {
		defer f.Release()
		for next < len(wants) && f.PTS >= wants[next].pts-time.Millisecond {
			w := &wants[next]
			k := key{w.pts, w.box}
			s, ok := done[k]
			if !ok {
				var err error
				if s, err = encodeShot(f, w.box); err != nil {
					return err
				}
				done[k] = s
			}
			s.id, s.best = evs[w.ev].id, w.best
			out = append(out, s)
			next++
		}
		if next == len(wants) {
			return errStop
		}
		return nil
	}
	ctx := context.Background()
	for i := range units {
		u := &units[i]
		au := media.AccessUnit{Codec: u.Codec, Data: u.Data, PTS: u.PTS, DTS: u.DTS, Key: u.Key}
		if err := dec.Decode(ctx, &au, emit); err != nil {
			if errors.Is(err, errStop) {
				return out, nil
			}
			if len(out) == 0 && i == 0 {
				return nil, err
			}
		}
	}
	if err := dec.Flush(ctx, emit); err != nil && !errors.Is(err, errStop) {
		return out, err
	}
	if next < len(wants) {
		return out, fmt.Errorf("%d frames to snapshot not in the clip", len(wants)-next)
	}
	return out, nil
}

// encodeShot encodes f as a JPEG, clean and with box drawn.
func encodeShot(f *frame.Frame, box [4]float32) (shot, error) {
	img, err := toImage(f)
	if err != nil {
		return shot{}, err
	}
	var clean, boxed bytes.Buffer
	if err := jpeg.Encode(&clean, img, &jpeg.Options{Quality: SnapshotQuality}); err != nil {
		return shot{}, err
	}
	rgba := image.NewRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, image.Point{}, draw.Src)
	strokeBox(rgba, box)
	if err := jpeg.Encode(&boxed, rgba, &jpeg.Options{Quality: SnapshotQuality}); err != nil {
		return shot{}, err
	}
	return shot{clean: clean.Bytes(), boxed: boxed.Bytes()}, nil
}

// toImage copies a host frame into an image: 4:2:0 formats as YCbCr, packed RGB as RGBA.
func toImage(f *frame.Frame) (image.Image, error) {
	if f.OnDevice() || f.Planes[0] == nil {
		return nil, errors.New("device frame")
	}
	w, h := f.Width, f.Height
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("frame has no size (%dx%d)", w, h)
	}
	switch f.Format {
	case frame.FormatI420, frame.FormatNV12:
		img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
		cw, ch := (w+1)/2, (h+1)/2
		for y := 0; y < h; y++ {
			copy(img.Y[y*img.YStride:y*img.YStride+w], f.Planes[0][y*f.Strides[0]:])
		}
		for y := 0; y < ch; y++ {
			cb, cr := img.Cb[y*img.CStride:y*img.CStride+cw], img.Cr[y*img.CStride:y*img.CStride+cw]
			if f.Format == frame.FormatI420 {
				copy(cb, f.Planes[1][y*f.Strides[1]:])
				copy(cr, f.Planes[2][y*f.Strides[2]:])
				continue
			}
			uv := f.Planes[1][y*f.Strides[1]:]
			for x := 0; x < cw; x++ {
				cb[x], cr[x] = uv[2*x], uv[2*x+1]
			}
		}
		if !f.FullRange { // Go's YCbCr is JFIF (full range): expand studio swing
			for i, v := range img.Y {
				img.Y[i] = expand(v, 16, 235)
			}
			for i := range img.Cb {
				img.Cb[i], img.Cr[i] = expand(img.Cb[i], 16, 240), expand(img.Cr[i], 16, 240)
			}
		}
		return img, nil
	case frame.FormatRGB24, frame.FormatBGR24:
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		r, b := 0, 2
		if f.Format == frame.FormatBGR24 {
			r, b = 2, 0
		}
		for y := 0; y < h; y++ {
			in, out := f.Planes[0][y*f.Strides[0]:], img.Pix[y*img.Stride:]
			for x := 0; x < w; x++ {
				out[4*x], out[4*x+1], out[4*x+2], out[4*x+3] = in[3*x+r], in[3*x+1], in[3*x+b], 0xff
			}
		}
		return img, nil
	}
	return nil, fmt.Errorf("cannot encode frames of format %s", f.Format)
}

// expand maps a studio-swing sample [lo, hi] (ITU-R BT.601 §2.5.3) to 0…255; chroma keeps 128.
func expand(v uint8, lo, hi int) uint8 {
	x := (int(v) - lo) * 255 / (hi - lo)
	if hi == 240 { // chroma: centred on 128
		x = (int(v)-128)*255/(hi-lo) + 128
	}
	return uint8(min(max(x, 0), 255))
}

// strokeBox draws box [x1,y1,x2,y2] (frame pixels) as a rectangle outline.
func strokeBox(img *image.RGBA, box [4]float32) {
	b := img.Bounds()
	t := max(2, b.Dx()/320)
	r := image.Rect(int(box[0]), int(box[1]), int(box[2]), int(box[3])).Intersect(b)
	if r.Empty() {
		return
	}
	c := image.NewUniform(color.RGBA{255, 48, 48, 255})
	for _, e := range []image.Rectangle{
		{r.Min, image.Pt(r.Max.X, r.Min.Y+t)}, {image.Pt(r.Min.X, r.Max.Y-t), r.Max},
		{r.Min, image.Pt(r.Min.X+t, r.Max.Y)}, {image.Pt(r.Max.X-t, r.Min.Y), r.Max},
	} {
		draw.Draw(img, e.Intersect(b), c, image.Point{}, draw.Src)
	}
}
