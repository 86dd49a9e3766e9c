package pipeline

import (
	"fmt"
	"time"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

// Cascade runs a secondary model on crops of a primary model's detections (e.g. a plate
// detector on vehicle boxes, a recognizer on plates). A detector's detections are attached to
// the parent detection (sink.Result.Secondary) in frame pixels; a model of an attribute kind
// (ocr, embedding, classify) gives the parent an attribute (sink.Result.Attrs). Crops from every
// frame of a primary batch are batched together for the secondary model. A secondary detector's
// own cascades run on its detections in turn (one level: vehicle → plate → text), their
// attributes going to the root detection.
type Cascade struct {
	// Model is the secondary model's name.
	Model string
	// Classes are the parent class ids cropped; empty means every class.
	Classes []int
	// MinScore is the lowest parent score cropped.
	MinScore float32
	// MaxCrops caps crops per frame (default 8), highest-scored parents first.
	MaxCrops int
	// Padding widens each crop by this fraction of the box on every side (0…1), clipped to the
	// frame.
	Padding float32
	// MinSize is the smallest crop side in pixels (after padding and clipping); smaller crops
	// are skipped.
	MinSize int
	// Every is the least time between two crops of one object (0: every frame); Once crops an
	// object once. Objects are followed from frame to frame by box overlap (IoU ≥ 0.3).
	Every time.Duration
	Once  bool
	// As names the attribute a track votes over its reads (ocr and classify kinds), e.g. plate.
	As string
}

// AttrRunner is a Runner of a model of an attribute kind (package attr).
type AttrRunner interface {
	// Attr is the attribute decoder; nil for a detector.
	Attr() attr.Decoder
	// NHWC reports a channels-last input.
	NHWC() bool
}

// Rectified plates: a quadrilateral with corners (the plate family) is warped to this size
// before the secondary's own preprocessing (about a single-row plate's 440×140 mm).
const rectW, rectH = 160, 48

// cascadeRunner is a cascade as one inference worker runs it.
type cascadeRunner struct {
	Cascade
	m       *modelRunner // the secondary model's runner: its engine and session lock
	classes map[int]bool
	pre     *preprocess.CPU
	slotLen int
	jobs    []cropJob
	view    frame.Frame
	rect    frame.Frame // a rectified quadrilateral
	planar  []float32   // channels-last models: the slot before interleaving
	cad     cadences
	// nested are the secondary detector's own cascades, run on its detections (their own
	// runners: the secondary's worker may run its cascades at the same time).
	nested []*cascadeRunner
}

type cropJob struct {
	res     *sink.Result
	parent  int        // the detection in res.Detections the crop's outputs belong to
	box     [4]float32 // the crop in frame pixels (padded, clipped)
	corners [4][2]float32
	quad    bool // corners set: rectify instead of cropping
	x, y    float32
	ok      bool
	tr      preprocess.Transform
	// secFrom, secTo are the secondary detections this crop produced in res.Secondary.
	secFrom, secTo int
}

func newCascadeRunner(c Cascade, m *modelRunner) (*cascadeRunner, error) {
	pre, err := preprocess.NewCPU(m.spec)
	if err != nil {
		return nil, fmt.Errorf("cascade model %s: %w", c.Model, err)
	}
	if c.MaxCrops <= 0 {
		c.MaxCrops = 8
	}
	cr := &cascadeRunner{Cascade: c, m: m, pre: pre, slotLen: m.slotLen}
	if len(c.Classes) > 0 {
		cr.classes = map[int]bool{}
		for _, id := range c.Classes {
			cr.classes[id] = true
		}
	}
	cr.cad.every, cr.cad.once = c.Every, c.Once
	return cr, nil
}

// collect queues the crops of one frame's detections (sorted by score, highest first).
func (c *cascadeRunner) collect(res *sink.Result, f *frame.Frame) {
	objs := c.cad.stream(res.Stream, res.PTS)
	n := 0
	for i := range res.Detections {
		if n >= c.MaxCrops {
			break
		}
		if c.add(res, i, &res.Detections[i], f, objs) {
			n++
		}
	}
}

// collectNested queues the crops of the secondary detections res.Secondary[from:to] (at most
// MaxCrops), whose outputs go to detection parent.
func (c *cascadeRunner) collectNested(res *sink.Result, from, to, parent int, f *frame.Frame) {
	objs := c.cad.stream(res.Stream, res.PTS)
	n := 0
	for k := from; k < to && k < len(res.Secondary) && n < c.MaxCrops; k++ {
		if c.add(res, parent, &res.Secondary[k], f, objs) {
			n++
		}
	}
}

// add queues the crop of d unless a filter, its size or its cadence skips it.
func (c *cascadeRunner) add(res *sink.Result, parent int, d *detect.Detection, f *frame.Frame, objs *cadence) bool {
	if d.Score < c.MinScore || (c.classes != nil && !c.classes[d.ClassID]) {
		return false
	}
	w, h := d.Box[2]-d.Box[0], d.Box[3]-d.Box[1]
	px, py := w*c.Padding, h*c.Padding
	box := [4]float32{
		max(d.Box[0]-px, 0), max(d.Box[1]-py, 0),
		min(d.Box[2]+px, float32(f.Width)), min(d.Box[3]+py, float32(f.Height)),
	}
	side := float32(max(c.MinSize, 1))
	if !(box[2]-box[0] >= side && box[3]-box[1] >= side) {
		return false
	}
	if objs != nil && !objs.due(box, res.PTS) {
		return false
	}
	j := cropJob{res: res, parent: parent, box: box}
	if d.HasCorners() {
		j.corners, j.quad = d.Corners, true
		if c.Padding > 0 { // widen the quadrilateral about its centre
			var cx, cy float32
			for _, p := range d.Corners {
				cx, cy = cx+p[0]/4, cy+p[1]/4
			}
			for i, p := range d.Corners {
				j.corners[i] = [2]float32{cx + (p[0]-cx)*(1+2*c.Padding), cy + (p[1]-cy)*(1+2*c.Padding)}
			}
		}
	}
	c.jobs = append(c.jobs, j)
	return true
}

// run infers every queued crop in batches of the secondary model's MaxBatch, then the
// secondary's own cascades on what it found; frames gives each result's frame. Errors drop the
// crops of the failing batch (counted by the caller) and are returned.
func (c *cascadeRunner) run(frames map[*sink.Result]*frame.Frame) error {
	defer func() { c.jobs = c.jobs[:0] }()
	if len(c.jobs) == 0 {
		return nil
	}
	err := c.runJobs(frames)
	for _, nc := range c.nested {
		for i := range c.jobs {
			j := &c.jobs[i]
			if j.secTo > j.secFrom {
				nc.collectNested(j.res, j.secFrom, j.secTo, j.parent, frames[j.res])
			}
		}
		if len(nc.jobs) == 0 {
			continue
		}
		if e := nc.runJobs(frames); e != nil && err == nil {
			err = e
		}
		nc.jobs = nc.jobs[:0]
	}
	return err
}

func (c *cascadeRunner) runJobs(frames map[*sink.Result]*frame.Frame) error {
	c.m.session.Lock() // the secondary's own worker may be using the same session
	defer c.m.session.Unlock()
	r := c.m.eng.Acquire()
	if r == nil {
		return fmt.Errorf("cascade model %s is closed", c.Model)
	}
	defer r.Release()
	maxBatch := r.MaxBatch()
	var firstErr error
	for start := 0; start < len(c.jobs); start += maxBatch {
		batch := c.jobs[start:min(start+maxBatch, len(c.jobs))]
		if err := c.runBatch(r, batch, frames); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// prepare writes job j's crop into slot.
func (c *cascadeRunner) prepare(j *cropJob, f *frame.Frame, slot []float32, nhwc, rectify bool) error {
	j.ok = false
	src := &c.view
	if rectify && j.quad {
		if err := preprocess.Rectify(&c.rect, f, j.corners, rectW, rectH); err != nil {
			clear(slot)
			return nil // a degenerate quadrilateral: no crop
		}
		src = &c.rect
	} else {
		b := j.box
		x, y, ok := f.CropInto(&c.view, int(b[0]), int(b[1]), int(b[2]-b[0]+0.5), int(b[3]-b[1]+0.5))
		if !ok {
			clear(slot)
			return nil
		}
		j.x, j.y = float32(x), float32(y)
	}
	dst := slot
	if nhwc {
		c.planar = grow(c.planar, len(slot))
		dst = c.planar
	}
	var err error
	if j.tr, err = c.pre.Run(src, dst); err != nil {
		return err
	}
	if nhwc {
		preprocess.Interleave(slot, dst, c.slotLen/3)
	}
	j.ok = true
	return nil
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func (c *cascadeRunner) runBatch(r Runner, batch []cropJob, frames map[*sink.Result]*frame.Frame) error {
	n := len(batch)
	in, err := r.Input(n)
	if err != nil {
		return err
	}
	var ad attr.Decoder
	nhwc := false
	if ar, ok := r.(AttrRunner); ok {
		ad, nhwc = ar.Attr(), ar.NHWC()
	}
	for b := range batch {
		if err := c.prepare(&batch[b], frames[batch[b].res], in[b*c.slotLen:(b+1)*c.slotLen], nhwc, ad != nil); err != nil {
			return err
		}
	}
	outs, err := r.Run(n)
	if err != nil {
		return err
	}
	if ad != nil {
		for b := range batch {
			j := &batch[b]
			if !j.ok {
				continue
			}
			v := j.res.AddAttr(j.parent)
			if !ad.Decode(outs, b, v) {
				j.res.DropAttr()
				continue
			}
			v.Model, v.As = c.Model, c.As
		}
		return nil
	}
	dec := r.Decoder()
	name := c.Model
	for b := range batch {
		j := &batch[b]
		if !j.ok {
			continue
		}
		res := j.res
		start := len(res.Secondary)
		res.Secondary = dec.Decode(outs, b, j.tr, res.Secondary)
		offsetDetections(res.Secondary[start:], j.x, j.y)
		j.secFrom, j.secTo = start, len(res.Secondary)
		res.AttachSecondary(j.parent, name)
	}
	return nil
}

// offsetDetections moves detections found in a crop by the crop's top-left corner (x, y),
// pixels, into frame coordinates: boxes and, where present, corners.
func offsetDetections(dets []detect.Detection, x, y float32) {
	for k := range dets {
		s := &dets[k]
		s.Box[0] += x
		s.Box[1] += y
		s.Box[2] += x
		s.Box[3] += y
		if s.HasCorners() {
			for i := range s.Corners {
				s.Corners[i][0] += x
				s.Corners[i][1] += y
			}
		}
	}
}
