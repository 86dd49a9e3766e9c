package preprocess

import (
	"errors"
	"fmt"
	"runtime"

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
	// Workers splits the output rows of a frame across this many goroutines (≤ 0 means 1);
	// it must not change after Init. Streams already run in parallel, so 1 suits the
	// pipeline; more cuts one frame's latency. The extra goroutines start on the first Run
	// and stop on Close (or when the CPU is garbage collected).
	Workers int

	ready bool
	lut   [3][256]float32 // by output channel: (v·Scale − Mean[c]) / Std[c]
	yuv   [2]*yuvTables   // limited, full range; built on first use

	// Geometry for the current source size.
	srcW, srcH int
	place      Placement
	x, y       axis
	spans      []int32 // [x0, x1) pairs: the source columns the x filter reads
	bands      []band

	// Worker goroutines (Workers > 1).
	work    chan *band
	done    chan struct{}
	cleanup runtime.Cleanup
	job     job
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
	y0, y1 int        // output rows of the resized picture, [y0, y1)
	packed []uint64   // one source row, packed into lanes
	ring   [][]uint64 // horizontally resampled source rows, nw packed pixels each
	ringY  []int      // source row held by each ring slot, -1 when none
	rows   [][]uint64 // the rows of the current output row, one per y tap
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

// Close stops the worker goroutines started when Workers > 1; a later Run starts them again.
func (c *CPU) Close() {
	if c.work != nil {
		c.cleanup.Stop()
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
	c.work = make(chan *band, c.Workers)
	c.done = make(chan struct{}, c.Workers)
	for range c.Workers - 1 {
		go func(work <-chan *band, done chan<- struct{}) {
			for b := range work {
				b.run()
				done <- struct{}{}
			}
		}(c.work, c.done)
	}
	// The goroutines hold only the channels, so an abandoned CPU is collected, and this stops
	// them.
	c.cleanup = runtime.AddCleanup(c, func(work chan *band) { close(work) }, c.work)
}

// setup computes the geometry and tables for a w×h source.
func (c *CPU) setup(w, h int) {
	c.srcW, c.srcH = w, h
	c.place = c.Spec.Place(w, h)
	nw, nh := c.place.Width, c.place.Height
	setAxes(&c.x, &c.y, c.Spec.Interp, w, h, nw, nh)

	// Runs of columns the x filter reads, so that only those are converted or packed: a
	// large shrink skips most of each row.
	c.spans = c.spans[:0]
	for d, s := range c.x.start {
		for t := range c.x.win {
			if c.x.wt[d*c.x.win+t] == 0 {
				continue
			}
			x := int32(int(s) + t)
			if n := len(c.spans); n > 0 && x <= c.spans[n-1] {
				c.spans[n-1] = max(c.spans[n-1], x+1) // inside or extending the last run
			} else {
				c.spans = append(c.spans, x, x+1)
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
		b.packed = grow(b.packed, w)
		b.ring = b.ring[:0]
		b.ringY = b.ringY[:0]
		for range c.y.win {
			b.ring = append(b.ring, make([]uint64, nw))
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
	shift := min(c.x.bits, packedBits) + c.y.bits
	rows := b.rows
	for dy := b.y0; dy < b.y1; dy++ {
		for t, sy := range c.y.idx[dy*ty : (dy+1)*ty] {
			rows[t] = b.row(int(sy))
		}
		o := (c.place.Y+dy)*W + c.place.X
		p0 := j.planes[0][o : o+nw]
		p1 := j.planes[1][o : o+nw]
		p2 := j.planes[2][o : o+nw]
		wts := c.y.tw[dy*ty : (dy+1)*ty]
		switch {
		case ty == 2 && shift == 2*linearBits:
			vLinear(p0, p1, p2, rows[0], rows[1], wts[0], wts[1], j.luts)
		case ty == 3:
			vArea3(p0, p1, p2, rows[0], rows[1], rows[2], wts, shift, j.luts)
		default:
			vGeneral(p0, p1, p2, rows, wts, shift, j.luts)
		}
	}
}

// row returns source row sy packed and resampled horizontally (nw pixels, lanes in
// Q(x.bits)), computing it unless the ring holds it.
func (b *band) row(sy int) []uint64 {
	slot := sy % len(b.ring)
	out := b.ring[slot]
	if b.ringY[slot] == sy {
		return out
	}
	b.ringY[slot] = sy
	c := b.c
	f := c.job.f
	switch f.Format {
	case frame.FormatBGR24, frame.FormatRGB24:
		src := f.Planes[0][sy*f.Strides[0]:]
		for k := 0; k < len(c.spans); k += 2 {
			packSpan(b.packed, src, int(c.spans[k]), int(c.spans[k+1]))
		}
	case frame.FormatI420:
		ys := f.Planes[0][sy*f.Strides[0]:]
		us := f.Planes[1][(sy>>1)*f.Strides[1]:]
		vs := f.Planes[2][(sy>>1)*f.Strides[2]:]
		b.convert(ys, us, vs, 1)
	case frame.FormatNV12:
		ys := f.Planes[0][sy*f.Strides[0]:]
		uv := f.Planes[1][(sy>>1)*f.Strides[1]:]
		b.convert(ys, uv, uv[1:], 2)
	}
	if c.x.bits > packedBits {
		hWide(out, b.packed, &c.x)
	} else {
		hResample(out, b.packed, &c.x)
	}
	return out
}

func (b *band) convert(ys, us, vs []byte, cs int) {
	c := b.c
	for k := 0; k < len(c.spans); k += 2 {
		c.job.yuv.span(b.packed, ys, us, vs, cs, int(c.spans[k]), int(c.spans[k+1]))
	}
}
