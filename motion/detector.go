// Package motion finds what moves in a stream's decoded frames, cheaply: the luma plane is
// box-downscaled to about Width pixels across, compared with a running-average background,
// per-pixel differences above a threshold are grouped into a grid of cells (a cell moves when
// enough of its pixels do: isolated noisy pixels never count), masked areas are ignored, and a
// frame where too large a share changes at once is taken for a lighting change, not motion. The
// moving cells' connected groups are the motion boxes. After the first frame of a size, Process
// allocates nothing.
package motion

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/vinfer/vinfer/frame"
)

// Defaults of Config's zero fields.
const (
	DefaultWidth     = 160
	DefaultThreshold = 20
	DefaultCell      = 8
	DefaultCellShare = 0.25
	DefaultLighting  = 0.6
	DefaultLearn     = 3
)

// Config tunes a Detector; zero fields take the defaults.
type Config struct {
	// Width is the downscaled plane's width in pixels (≥ 16): the frame's luma is averaged over
	// square blocks of width/Width pixels (at least 1).
	Width int
	// Threshold is the least difference, in 8-bit luma levels, of a moving pixel (1…255).
	Threshold int
	// Cell is the side of a grid cell in downscaled pixels (2…32).
	Cell int
	// CellShare is the least share of a cell's unmasked pixels that must move for the cell to
	// move (0…1).
	CellShare float64
	// Lighting is the share of the unmasked plane above which a change is taken for lighting
	// (a cloud, lights switched on, the camera's exposure) and the background relearnt (0…1].
	Lighting float64
	// Learn is the background's learning rate as a shift: each frame moves a still pixel's
	// background 1/2^Learn of the way to it, a moving pixel's 1/2^(Learn+3) (1…8).
	Learn int
	// Mask lists polygons, in frame pixels, whose motion is ignored (a clock, trees).
	Mask []Polygon
}

// Polygon is a closed outline of at least three (x, y) vertices in frame pixels.
type Polygon [][2]float64

// ErrConfig wraps every Config error.
var ErrConfig = errors.New("motion")

// Validate checks c's fields; errors name the field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("%w: %s %v must be %s", ErrConfig, field, v, want))
	}
	if c.Width != 0 && (c.Width < 16 || c.Width > 1024) {
		bad("width", c.Width, "16…1024")
	}
	if c.Threshold != 0 && (c.Threshold < 1 || c.Threshold > 255) {
		bad("threshold", c.Threshold, "1…255")
	}
	if c.Cell != 0 && (c.Cell < 2 || c.Cell > 32) {
		bad("cell", c.Cell, "2…32")
	}
	if !(c.CellShare >= 0 && c.CellShare <= 1) {
		bad("cell_share", c.CellShare, "0…1")
	}
	if !(c.Lighting >= 0 && c.Lighting <= 1) {
		bad("lighting", c.Lighting, "0…1")
	}
	if c.Learn != 0 && (c.Learn < 1 || c.Learn > 8) {
		bad("learn", c.Learn, "1…8")
	}
	for i, p := range c.Mask {
		if len(p) < 3 {
			bad(fmt.Sprintf("mask[%d]", i), len(p), "at least 3 points")
		}
	}
	return errors.Join(errs...)
}

func (c *Config) defaults() {
	c.Width = cmp.Or(c.Width, DefaultWidth)
	c.Threshold = cmp.Or(c.Threshold, DefaultThreshold)
	c.Cell = cmp.Or(c.Cell, DefaultCell)
	c.CellShare = cmp.Or(c.CellShare, DefaultCellShare)
	c.Lighting = cmp.Or(c.Lighting, DefaultLighting)
	c.Learn = cmp.Or(c.Learn, DefaultLearn)
}

// Box is a moving region in frame pixels: [X0,X1)×[Y0,Y1).
type Box struct{ X0, Y0, X1, Y1 int }

// Result is what Process found in one frame.
type Result struct {
	// Fraction is the share of the unmasked plane in moving cells (0…1); 0 on a lighting
	// change and on the first frame.
	Fraction float64
	// Boxes are the moving regions, valid until the next Process.
	Boxes []Box
	// Lighting reports a change too large to be motion: the background was relearnt.
	Lighting bool
	// Learning reports the first frame of a size: the background starts from it.
	Learning bool
}

// Moving reports whether the frame has motion.
func (r *Result) Moving() bool { return len(r.Boxes) > 0 }

// Detector finds motion in the frames of one stream. Use one per stream, from one goroutine.
type Detector struct {
	cfg Config

	fw, fh int // frame size the plane was made for
	step   int // frame pixels per plane pixel (block side)
	w, h   int // plane size
	cw, ch int // grid size in cells

	bg      []uint16 // background, luma·256
	cur     []uint8  // current downscaled plane
	acc     []uint32 // one plane row's block sums
	mask    []bool   // plane pixels to ignore
	cellN   []uint16 // unmasked pixels per cell
	cellHit []uint16 // moving pixels per cell this frame
	cellOn  []bool
	label   []int32 // cell → component (flood fill)
	stack   []int32
	boxes   []Box
	usable  int // unmasked plane pixels
}

// New returns a detector for cfg (validated: errors wrap ErrConfig).
func New(cfg Config) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Detector{cfg: cfg}, nil
}

// Reset forgets the background: the next frame starts it again.
func (d *Detector) Reset() { d.fw, d.fh = 0, 0 }

// Process compares f's luma (I420 or NV12 in host memory; plane 0) with the background and
// learns it. Frames without a host luma plane return an empty result.
func (d *Detector) Process(f *frame.Frame) Result {
	if f.Width <= 0 || f.Height <= 0 || f.Strides[0] < f.Width || len(f.Planes[0]) < f.Strides[0]*(f.Height-1)+f.Width {
		return Result{}
	}
	learning := false
	if f.Width != d.fw || f.Height != d.fh {
		d.resize(f.Width, f.Height)
		learning = true
	}
	d.downscale(f.Planes[0], f.Strides[0])
	if learning {
		for i, v := range d.cur {
			d.bg[i] = uint16(v) << 8
		}
		return Result{Learning: true}
	}
	return d.compare()
}

func (d *Detector) resize(fw, fh int) {
	d.fw, d.fh = fw, fh
	d.step = max(1, fw/d.cfg.Width)
	d.w, d.h = max(1, fw/d.step), max(1, fh/d.step)
	c := d.cfg.Cell
	d.cw, d.ch = (d.w+c-1)/c, (d.h+c-1)/c
	n, cells := d.w*d.h, d.cw*d.ch
	d.bg, d.cur, d.mask, d.acc = make([]uint16, n), make([]uint8, n), make([]bool, n), make([]uint32, d.w)
	d.cellN, d.cellHit, d.cellOn = make([]uint16, cells), make([]uint16, cells), make([]bool, cells)
	d.label, d.stack = make([]int32, cells), make([]int32, 0, cells)
	d.boxes = make([]Box, 0, cells)
	d.usable = 0
	for y := 0; y < d.h; y++ {
		for x := 0; x < d.w; x++ {
			px, py := (float64(x)+0.5)*float64(d.step), (float64(y)+0.5)*float64(d.step)
			m := false
			for _, p := range d.cfg.Mask {
				if inside(p, px, py) {
					m = true
					break
				}
			}
			d.mask[y*d.w+x] = m
			if !m {
				d.usable++
				d.cellN[(y/c)*d.cw+x/c]++
			}
		}
	}
}

// downscale averages step×step blocks of the luma plane into d.cur; blocks of side ≥ 4 are
// sampled every other row and column (a quarter of the reads, the same mean on real pictures).
func (d *Detector) downscale(y []byte, stride int) {
	s := d.step
	inc := 1
	if s >= 4 {
		inc = 2
	}
	per := uint32(((s + inc - 1) / inc) * ((s + inc - 1) / inc))
	acc := d.acc
	for by := 0; by < d.h; by++ {
		clear(acc)
		for dy := 0; dy < s; dy += inc {
			r := (by*s + dy) * stride
			line := y[r : r+d.w*s]
			for bx := range acc {
				blk := line[bx*s : bx*s+s]
				var sum uint32
				for dx := 0; dx < len(blk); dx += inc {
					sum += uint32(blk[dx])
				}
				acc[bx] += sum
			}
		}
		out := d.cur[by*d.w : (by+1)*d.w]
		for bx, v := range acc {
			out[bx] = uint8(v / per)
		}
	}
}

// compare marks moving pixels and cells, rejects lighting changes, learns the background and
// groups moving cells into boxes.
func (d *Detector) compare() Result {
	th := int32(d.cfg.Threshold)
	c := d.cfg.Cell
	clear(d.cellHit)
	changed := 0
	learn := uint(d.cfg.Learn)
	for y := 0; y < d.h; y++ {
		row := y * d.w
		crow := (y / c) * d.cw
		for x := 0; x < d.w; x++ {
			i := row + x
			cur := int32(d.cur[i]) << 8
			bg := int32(d.bg[i])
			diff := cur - bg
			moving := false
			if !d.mask[i] && (diff > th<<8 || diff < -(th<<8)) {
				moving = true
				changed++
				d.cellHit[crow+x/c]++
			}
			if moving {
				d.bg[i] = uint16(bg + diff>>(learn+3))
			} else {
				d.bg[i] = uint16(bg + diff>>learn)
			}
		}
	}
	if d.usable == 0 {
		return Result{}
	}
	if float64(changed) > d.cfg.Lighting*float64(d.usable) {
		for i, v := range d.cur {
			d.bg[i] = uint16(v) << 8
		}
		return Result{Lighting: true}
	}
	on := 0
	for i := range d.cellOn {
		n := d.cellN[i]
		d.cellOn[i] = n > 0 && float64(d.cellHit[i]) >= d.cfg.CellShare*float64(n) && d.cellHit[i] > 0
		if d.cellOn[i] {
			on += int(n)
		}
	}
	d.group()
	return Result{Fraction: float64(on) / float64(d.usable), Boxes: d.boxes}
}

// group labels 4-connected moving cells and writes one box per group, in frame pixels.
func (d *Detector) group() {
	d.boxes = d.boxes[:0]
	for i := range d.label {
		d.label[i] = -1
	}
	span := d.cfg.Cell * d.step
	for start := range d.cellOn {
		if !d.cellOn[start] || d.label[start] >= 0 {
			continue
		}
		id := int32(len(d.boxes))
		b := Box{X0: 1 << 30, Y0: 1 << 30}
		d.stack = append(d.stack[:0], int32(start))
		d.label[start] = id
		for len(d.stack) > 0 {
			k := int(d.stack[len(d.stack)-1])
			d.stack = d.stack[:len(d.stack)-1]
			cx, cy := k%d.cw, k/d.cw
			b.X0, b.Y0 = min(b.X0, cx*span), min(b.Y0, cy*span)
			b.X1, b.Y1 = max(b.X1, min((cx+1)*span, d.fw)), max(b.Y1, min((cy+1)*span, d.fh))
			for _, n := range [4][2]int{{cx - 1, cy}, {cx + 1, cy}, {cx, cy - 1}, {cx, cy + 1}} {
				if n[0] < 0 || n[1] < 0 || n[0] >= d.cw || n[1] >= d.ch {
					continue
				}
				j := n[1]*d.cw + n[0]
				if d.cellOn[j] && d.label[j] < 0 {
					d.label[j] = id
					d.stack = append(d.stack, int32(j))
				}
			}
		}
		d.boxes = append(d.boxes, b)
	}
}

// inside reports whether (x, y) lies in p (even-odd rule).
func inside(p Polygon, x, y float64) bool {
	in := false
	for i, j := 0, len(p)-1; i < len(p); j, i = i, i+1 {
		xi, yi, xj, yj := p[i][0], p[i][1], p[j][0], p[j][1]
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			in = !in
		}
	}
	return in
}
