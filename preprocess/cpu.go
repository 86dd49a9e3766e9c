package preprocess

import (
	"errors"
	"fmt"

	"github.com/vinfer/vinfer/frame"
)

// CPU preprocesses host frames on the CPU. It fuses color conversion, resize, padding, channel
// order and normalization into one pass over the picture, writing one [3,H,W] float32 NCHW
// slot per call.
//
// How it works: the resize is separable, as OpenCV's. Each source row that an output row needs
// is converted to packed 8-bit BGR (YUV frames; packed frames are read in place), resampled
// horizontally in fixed point and kept in a small ring of rows; each output row then blends
// its rows vertically, rounds once to 8 bits like OpenCV's 8-bit resize and goes through a
// per-channel 256-entry table that applies (v·Scale − Mean[c]) / Std[c]. YUV is converted
// before resampling (as cvtColor then resize does) rather than sampled in YUV and converted
// after: the two differ wherever the conversion saturates, and only the former matches the
// reference models' OpenCV preprocessing. Only the source rows, and for YUV the source
// columns, that the filter reads are converted.
//
// Index and weight tables are computed for a source size and reused until the size changes,
// so steady-state Run calls allocate nothing. A CPU is not safe for concurrent use: give each
// worker its own.
type CPU struct {
	// Spec is the model's preprocessing; it must not change after Init.
	Spec Spec
	// Workers splits the output rows of a frame across this many goroutines (≤ 0 means 1).
	// Streams already run in parallel, so 1 suits the pipeline; more cuts one frame's latency.
	// With Workers > 1, Close stops the goroutines.
	Workers int

	ready bool
	lut   [3][256]float32 // by output channel: (v·Scale − Mean[c]) / Std[c]
	yuv   [2]*yuvTables   // limited, full range; built on first use

	// Geometry for the current source size.
	srcW, srcH int
	place      Placement
	x, y       axis
	xofs       []int32 // x.idx × 3: byte offsets in a packed row
	cols       []int32 // source columns the x filter reads; nil when it reads them all
	bands      []band

	// Worker goroutines (Workers > 1).
	work chan *band
	done chan struct{}
	job  job
}

// job is the frame being processed, shared by the bands.
type job struct {
	f      *frame.Frame
	yuv    *yuvTables
	planes [3][]float32 // destination plane of each source channel (source order)
	luts   [3]*[256]float32
}

// band is one worker's output rows and scratch buffers.
type band struct {
	c      *CPU
	y0, y1 int       // output rows of the resized picture, [y0, y1)
	packed []byte    // one converted source row, packed BGR (YUV frames)
	ring   [][]int32 // horizontally resampled source rows, nw×3 each
	ringY  []int     // source row held by each ring slot, -1 when none
	rows   [][]int32 // the rows of the current output row, one per y tap
}

// NewCPU returns an initialised CPU preprocessor for spec, or the spec's validation error.
func NewCPU(spec Spec) (*CPU, error) {
	c := &CPU{Spec: spec}
	if err := c.Init(); err != nil {
		return nil, err
	}
	return c, nil
}

// Init validates Spec and builds the normalization tables. It returns Spec.Validate's error.
func (c *CPU) Init() error {
	if err := c.Spec.Validate(); err != nil {
		return err
	}
	s := c.Spec
	for ch := range 3 {
		for v := range 256 {
			c.lut[ch][v] = (float32(v)*s.Scale - s.Mean[ch]) / s.Std[ch]
		}
	}
	c.Workers = max(c.Workers, 1)
	c.srcW, c.srcH = 0, 0
	c.ready = true
	return nil
}

// Close stops the worker goroutines started when Workers > 1. The CPU must not be used after.
func (c *CPU) Close() {
	if c.work != nil {
		close(c.work)
		c.work = nil
	}
}

// Errors returned by Run.
var (
	ErrNotInitialized = errors.New("preprocess: CPU used before Init (use NewCPU or call Init)")
	ErrDeviceFrame    = errors.New("preprocess: frame is in GPU memory; download it or use a GPU preprocessor")
)

// Run converts f into dst, which must hold at least 3·Spec.Height·Spec.Width float32 (one NCHW
// slot, [3,H,W], channels in Spec.Color order; only that prefix is written). It returns the
// mapping from model-input pixels back to f's pixels. Errors name the problem: an
// uninitialised CPU, a device frame, an unsupported pixel format, planes too short for the
// frame's size and strides, or dst too short. f is only read.
func (c *CPU) Run(f *frame.Frame, dst []float32) (Transform, error) {
	if !c.ready {
		return Transform{}, ErrNotInitialized
	}
	if err := checkFrame(f); err != nil {
		return Transform{}, err
	}
	W, H := c.Spec.Width, c.Spec.Height
	if len(dst) < 3*W*H {
		return Transform{}, fmt.Errorf("preprocess: destination holds %d float32, need 3×%d×%d = %d", len(dst), H, W, 3*W*H)
	}
	if f.Width != c.srcW || f.Height != c.srcH {
		c.setup(f.Width, f.Height)
	}
	plane := W * H
	c.pad(dst[:3*plane])

	j := &c.job
	j.f = f
	j.yuv = nil
	switch f.Format {
	case frame.FormatI420, frame.FormatNV12:
		full := 0
		if f.FullRange {
			full = 1
		}
		if c.yuv[full] == nil {
			c.yuv[full] = newYUVTables(f.FullRange)
		}
		j.yuv = c.yuv[full]
	}
	// Source channel order: BGR for YUV (converted to BGR) and BGR24, RGB for RGB24.
	srcRGB := f.Format == frame.FormatRGB24
	for sc := range 3 {
		oc := sc
		if srcRGB != (c.Spec.Color == RGB) {
			oc = 2 - sc
		}
		j.planes[sc] = dst[oc*plane : (oc+1)*plane]
		j.luts[sc] = &c.lut[oc]
	}

	if len(c.bands) == 1 {
		c.bands[0].run()
	} else {
		c.startWorkers()
		for i := 1; i < len(c.bands); i++ {
			c.work <- &c.bands[i]
		}
		c.bands[0].run()
		for i := 1; i < len(c.bands); i++ {
			<-c.done
		}
	}
	j.f = nil
	return c.place.Transform(f.Width, f.Height), nil
}

func (c *CPU) startWorkers() {
	if c.work != nil {
		return
	}
	c.work = make(chan *band, len(c.bands))
	c.done = make(chan struct{}, len(c.bands))
	for range c.Workers - 1 {
		go func(work <-chan *band, done chan<- struct{}) {
			for b := range work {
				b.run()
				done <- struct{}{}
			}
		}(c.work, c.done)
	}
}

// setup computes the geometry and tables for a w×h source.
func (c *CPU) setup(w, h int) {
	c.srcW, c.srcH = w, h
	c.place = c.Spec.Place(w, h)
	nw, nh := c.place.Width, c.place.Height
	setAxes(&c.x, &c.y, c.Spec.Interp, w, h, nw, nh)

	c.xofs = c.xofs[:0]
	for _, i := range c.x.idx {
		c.xofs = append(c.xofs, 3*i)
	}
	// Columns the x filter reads, for converting only those of a YUV row.
	used := make([]bool, w)
	n := 0
	for i, x := range c.x.idx {
		if c.x.wt[i] != 0 && !used[x] {
			used[x] = true
			n++
		}
	}
	c.cols = c.cols[:0]
	if n < w*9/10 {
		for x, u := range used {
			if u {
				c.cols = append(c.cols, int32(x))
			}
		}
	}

	workers := max(1, min(c.Workers, nh))
	if cap(c.bands) < workers {
		c.bands = make([]band, workers)
	}
	c.bands = c.bands[:workers]
	for i := range c.bands {
		b := &c.bands[i]
		b.c = c
		b.y0, b.y1 = nh*i/workers, nh*(i+1)/workers
		b.packed = grow(b.packed, 3*w)
		b.ring = b.ring[:0]
		b.ringY = b.ringY[:0]
		for range c.y.taps {
			b.ring = append(b.ring, make([]int32, 3*nw))
			b.ringY = append(b.ringY, -1)
		}
		b.rows = grow(b.rows, c.y.taps)
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// pad fills the canvas outside the placed picture with the normalised Pad value.
func (c *CPU) pad(dst []float32) {
	W, H := c.Spec.Width, c.Spec.Height
	p := c.place
	if p.Width == W && p.Height == H {
		return
	}
	plane := W * H
	for ch := range 3 {
		v := c.lut[ch][c.Spec.Pad]
		d := dst[ch*plane : (ch+1)*plane]
		fill(d[:p.Y*W], v)
		for y := p.Y; y < p.Y+p.Height; y++ {
			row := d[y*W : (y+1)*W]
			fill(row[:p.X], v)
			fill(row[p.X+p.Width:], v)
		}
		fill(d[(p.Y+p.Height)*W:], v)
	}
}

func fill(s []float32, v float32) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

// run processes the band's output rows of the current job.
func (b *band) run() {
	c := b.c
	j := &c.job
	for i := range b.ringY {
		b.ringY[i] = -1
	}
	W := c.Spec.Width
	nw := c.place.Width
	ty := c.y.taps
	shift := c.x.bits + c.y.bits
	rows := b.rows
	for dy := b.y0; dy < b.y1; dy++ {
		for t := range ty {
			rows[t] = b.row(int(c.y.idx[dy*ty+t]))
		}
		o := (c.place.Y+dy)*W + c.place.X
		p0 := j.planes[0][o : o+nw]
		p1 := j.planes[1][o : o+nw]
		p2 := j.planes[2][o : o+nw]
		wts := c.y.wt[dy*ty : (dy+1)*ty]
		if ty == 2 && shift == 2*linearBits {
			vLinear(p0, p1, p2, rows[0], rows[1], wts[0], wts[1], j.luts)
		} else {
			vGeneral(p0, p1, p2, rows, wts, shift, j.luts)
		}
	}
}

// row returns source row sy converted and resampled horizontally (nw×3 values in Q(x.bits)),
// computing it unless the ring holds it.
func (b *band) row(sy int) []int32 {
	slot := sy % len(b.ring)
	out := b.ring[slot]
	if b.ringY[slot] == sy {
		return out
	}
	b.ringY[slot] = sy
	c := b.c
	f := c.job.f
	var src []byte
	switch f.Format {
	case frame.FormatBGR24, frame.FormatRGB24:
		o := sy * f.Strides[0]
		src = f.Planes[0][o : o+3*f.Width]
	case frame.FormatI420:
		ys := f.Planes[0][sy*f.Strides[0]:]
		us := f.Planes[1][(sy>>1)*f.Strides[1]:]
		vs := f.Planes[2][(sy>>1)*f.Strides[2]:]
		b.convert(ys, us, vs, 1)
		src = b.packed
	case frame.FormatNV12:
		ys := f.Planes[0][sy*f.Strides[0]:]
		uv := f.Planes[1][(sy>>1)*f.Strides[1]:]
		b.convert(ys, uv, uv[1:], 2)
		src = b.packed
	}
	if c.x.taps == 2 {
		hLinear(out, src, c.xofs, c.x.wt)
	} else {
		hGeneral(out, src, c.xofs, c.x.wt, c.x.taps)
	}
	return out
}

func (b *band) convert(ys, us, vs []byte, cs int) {
	c := b.c
	if c.cols == nil {
		c.job.yuv.row(b.packed, ys, us, vs, cs, c.srcW)
	} else {
		c.job.yuv.cols(b.packed, ys, us, vs, cs, c.cols)
	}
}

// hLinear resamples a packed 3-channel row with two taps per output pixel.
func hLinear(dst []int32, src []byte, xofs, wt []int32) {
	n := len(dst) / 3
	xofs, wt = xofs[:2*n], wt[:2*n]
	for d := range n {
		i0, i1 := xofs[2*d], xofs[2*d+1]
		w0, w1 := wt[2*d], wt[2*d+1]
		s0 := src[i0 : i0+3 : i0+3]
		s1 := src[i1 : i1+3 : i1+3]
		o := dst[3*d : 3*d+3 : 3*d+3]
		o[0] = w0*int32(s0[0]) + w1*int32(s1[0])
		o[1] = w0*int32(s0[1]) + w1*int32(s1[1])
		o[2] = w0*int32(s0[2]) + w1*int32(s1[2])
	}
}

// hGeneral resamples a packed 3-channel row with taps weights per output pixel.
func hGeneral(dst []int32, src []byte, xofs, wt []int32, taps int) {
	n := len(dst) / 3
	xofs, wt = xofs[:taps*n], wt[:taps*n]
	for d := range n {
		var a0, a1, a2 int32
		for t := d * taps; t < (d+1)*taps; t++ {
			i, w := xofs[t], wt[t]
			s := src[i : i+3 : i+3]
			a0 += w * int32(s[0])
			a1 += w * int32(s[1])
			a2 += w * int32(s[2])
		}
		o := dst[3*d : 3*d+3 : 3*d+3]
		o[0], o[1], o[2] = a0, a1, a2
	}
}

// vLinear blends two resampled rows (Q11 each way, so Q22 products fit int32 as in OpenCV),
// rounds to 8 bits and writes the normalised values to the three planes.
func vLinear(p0, p1, p2 []float32, r0, r1 []int32, w0, w1 int32, luts [3]*[256]float32) {
	const round = 1 << (2*linearBits - 1)
	n := len(p0)
	p1, p2 = p1[:n], p2[:n]
	r0, r1 = r0[:3*n], r1[:3*n]
	l0, l1, l2 := luts[0], luts[1], luts[2]
	for d := range n {
		a := r0[3*d : 3*d+3 : 3*d+3]
		b := r1[3*d : 3*d+3 : 3*d+3]
		p0[d] = l0[uint8((w0*a[0]+w1*b[0]+round)>>(2*linearBits))]
		p1[d] = l1[uint8((w0*a[1]+w1*b[1]+round)>>(2*linearBits))]
		p2[d] = l2[uint8((w0*a[2]+w1*b[2]+round)>>(2*linearBits))]
	}
}

// vGeneral blends any number of resampled rows in int64, rounds to 8 bits and writes the
// normalised values to the three planes.
func vGeneral(p0, p1, p2 []float32, rows [][]int32, wt []int32, shift uint, luts [3]*[256]float32) {
	round := int64(1) << (shift - 1)
	n := len(p0)
	p1, p2 = p1[:n], p2[:n]
	l0, l1, l2 := luts[0], luts[1], luts[2]
	for d := range n {
		a0, a1, a2 := round, round, round
		for t, r := range rows {
			w := int64(wt[t])
			s := r[3*d : 3*d+3 : 3*d+3]
			a0 += w * int64(s[0])
			a1 += w * int64(s[1])
			a2 += w * int64(s[2])
		}
		p0[d] = l0[uint8(min(a0>>shift, 255))]
		p1[d] = l1[uint8(min(a1>>shift, 255))]
		p2[d] = l2[uint8(min(a2>>shift, 255))]
	}
}
