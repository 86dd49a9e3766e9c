package pipeline

import (
	"fmt"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

// Cascade runs a secondary model on crops of a primary model's detections (e.g. a face
// detector on person boxes). Its detections are attached to the parent detection
// (sink.Result.Secondary) in frame pixels. Crops from every frame of a primary batch are
// batched together for the secondary model.
type Cascade struct {
	// Model is the secondary model's name.
	Model string
	// Classes are the parent class ids cropped; empty means every class.
	Classes []int
	// MinScore is the lowest parent score cropped.
	MinScore float32
	// MaxCrops caps crops per frame (default 8), highest-scored parents first.
	MaxCrops int
}

// cascadeRunner is a cascade as one inference worker runs it.
type cascadeRunner struct {
	Cascade
	m       *modelRunner // the secondary model's runner: its engine and session lock
	classes map[int]bool
	pre     *preprocess.CPU
	slotLen int
	jobs    []cropJob
	view    frame.Frame
}

type cropJob struct {
	res    *sink.Result
	parent int
	x, y   float32 // crop origin in the frame
	tr     preprocess.Transform
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
	return cr, nil
}

// collect queues the crops of one frame's detections (sorted by score, highest first).
func (c *cascadeRunner) collect(res *sink.Result, f *frame.Frame) {
	n := 0
	for i := range res.Detections {
		d := &res.Detections[i]
		if n >= c.MaxCrops || d.Score < c.MinScore || (c.classes != nil && !c.classes[d.ClassID]) {
			continue
		}
		n++
		c.jobs = append(c.jobs, cropJob{res: res, parent: i, x: d.Box[0], y: d.Box[1]})
	}
}

// run infers every queued crop in batches of the secondary model's MaxBatch; frames gives each
// result's frame. Errors drop the crops of the failing batch (counted by the
// caller) and are returned.
func (c *cascadeRunner) run(frames map[*sink.Result]*frame.Frame) error {
	defer func() { c.jobs = c.jobs[:0] }()
	if len(c.jobs) == 0 {
		return nil
	}
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

func (c *cascadeRunner) runBatch(r Runner, batch []cropJob, frames map[*sink.Result]*frame.Frame) error {
	n := len(batch)
	in, err := r.Input(n)
	if err != nil {
		return err
	}
	for b := range batch {
		j := &batch[b]
		d := j.res.Detections[j.parent]
		f := frames[j.res]
		x, y, ok := f.CropInto(&c.view, int(d.Box[0]), int(d.Box[1]), int(d.Box[2]-d.Box[0]+0.5), int(d.Box[3]-d.Box[1]+0.5))
		slot := in[b*c.slotLen : (b+1)*c.slotLen]
		if !ok {
			clear(slot)
			j.tr = preprocess.Transform{}
			continue
		}
		j.x, j.y = float32(x), float32(y)
		if j.tr, err = c.pre.Run(&c.view, slot); err != nil {
			return err
		}
	}
	outs, err := r.Run(n)
	if err != nil {
		return err
	}
	dec := r.Decoder()
	name := c.Model
	for b := range batch {
		j := &batch[b]
		if j.tr.ScaleX == 0 {
			continue
		}
		res := j.res
		start := len(res.Secondary)
		res.Secondary = dec.Decode(outs, b, j.tr, res.Secondary)
		for k := start; k < len(res.Secondary); k++ {
			s := &res.Secondary[k]
			s.Box[0] += j.x
			s.Box[1] += j.y
			s.Box[2] += j.x
			s.Box[3] += j.y
		}
		res.AttachSecondary(j.parent, name)
	}
	return nil
}
