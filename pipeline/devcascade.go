package pipeline

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

// ErrCascadeShared is returned when a model would be both a cascade on a GPU and the model of
// that GPU's own streams: a device cascade runs the secondary's lane 0, which its own streams'
// workers would use as well.
var ErrCascadeShared = errors.New("a model cascaded on a GPU cannot also serve that GPU's streams")

// devCascade is a cascade of a model of GPU frames: the crops are views of the device frames
// (no host copy), preprocessed, batched and inferred by the secondary's own GPU runner
// (FrameRunner, its kernel resizing and normalising each crop), on the secondary's lane 0,
// slot 0, under a lock shared by every lane and model that cascades to it. Crops are
// axis-aligned: a quadrilateral is not rectified on the GPU, and a secondary detector's own
// cascades do not run.
type devCascade struct {
	*cascadeRunner // the crop rules and job list (its pre and m are unused)
	eng            Engine
	mu             *sync.Mutex
	views          []frame.Frame
	frames         []*frame.Frame
	tr             []preprocess.Transform
}

// newDevCascade prepares cascade c of a model on GPU device: the secondary must load there and
// take frames; a channels-last secondary is refused (the kernel writes NCHW).
func (p *Pipeline) newDevCascade(c Cascade, device int) (*devCascade, error) {
	eng, err := p.opts.Models.Engine(c.Model, device)
	if err != nil {
		return nil, err
	}
	r := eng.Acquire()
	if r == nil {
		return nil, fmt.Errorf("model %s is closed", c.Model)
	}
	_, frames := r.(FrameRunner)
	ar, isAttr := r.(AttrRunner)
	nhwc := isAttr && ar.NHWC()
	r.Release()
	if !frames {
		return nil, fmt.Errorf("cascade model %s on cuda:%d does not take GPU frames", c.Model, device)
	}
	if nhwc {
		return nil, fmt.Errorf("cascade model %s has a channels-last input, which the GPU kernel does not write: decode this stream on the CPU", c.Model)
	}
	if p.devLocks == nil {
		p.devLocks = map[modelKey]*sync.Mutex{}
	}
	key := modelKey{name: c.Model, device: device}
	if _, ok := p.models[key]; ok {
		return nil, fmt.Errorf("model %s: %w", key, ErrCascadeShared)
	}
	mu := p.devLocks[key]
	if mu == nil {
		mu = &sync.Mutex{}
		p.devLocks[key] = mu
	}
	cr := &cascadeRunner{Cascade: c}
	if cr.MaxCrops <= 0 {
		cr.MaxCrops = 8
	}
	if len(c.Classes) > 0 {
		cr.classes = map[int]bool{}
		for _, id := range c.Classes {
			cr.classes[id] = true
		}
	}
	cr.cad.every, cr.cad.once = c.Every, c.Once
	return &devCascade{cascadeRunner: cr, eng: eng, mu: mu}, nil
}

// run crops the detections of results (results[b] from frames[b], held by the caller until it
// returns) and runs the secondary on them, attaching its detections or attributes. The caller
// is a lane worker of the same GPU, bound to it (FrameRunner.Bind); every lane shares d, under
// the secondary's lock.
func (d *devCascade) run(frames []*frame.Frame, results []*sink.Result) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jobs = d.jobs[:0]
	fs := map[*sink.Result]*frame.Frame{}
	for b, res := range results {
		if res != nil && frames[b] != nil {
			d.collect(res, frames[b])
			fs[res] = frames[b]
		}
	}
	if len(d.jobs) == 0 {
		return nil
	}
	r := d.eng.Acquire()
	if r == nil {
		return fmt.Errorf("cascade model %s is closed", d.Model)
	}
	defer r.Release()
	fr, ok := r.(FrameRunner)
	if !ok {
		return fmt.Errorf("cascade model %s does not take GPU frames", d.Model)
	}
	var ad attr.Decoder
	if ar, ok := r.(AttrRunner); ok {
		ad = ar.Attr()
	}
	maxBatch := max(1, r.MaxBatch())
	for start := 0; start < len(d.jobs); start += maxBatch {
		if err := d.runBatch(fr, ad, d.jobs[start:min(start+maxBatch, len(d.jobs))], fs); err != nil {
			return err
		}
	}
	return nil
}

func (d *devCascade) runBatch(fr FrameRunner, ad attr.Decoder, batch []cropJob, fs map[*sink.Result]*frame.Frame) error {
	d.views = grow2(d.views, len(batch))
	d.frames, d.tr = d.frames[:0], grow2(d.tr, len(batch))
	idx := make([]int, 0, len(batch)) // jobs with a crop, in submit order
	for i := range batch {
		j := &batch[i]
		f := fs[j.res]
		v := &d.views[len(d.frames)]
		b := j.box
		w, h := int(b[2]-b[0]+0.5), int(b[3]-b[1]+0.5)
		var x, y int
		var ok bool
		if f.OnDevice() {
			x, y, ok = f.CropDeviceInto(v, int(b[0]), int(b[1]), w, h)
		} else { // a runner of host frames standing in for a GPU (tests)
			x, y, ok = f.CropInto(v, int(b[0]), int(b[1]), w, h)
		}
		if !ok {
			continue
		}
		j.x, j.y, j.ok = float32(x), float32(y), true
		d.frames = append(d.frames, v)
		idx = append(idx, i)
	}
	if len(d.frames) == 0 {
		return nil
	}
	if err := fr.Submit(0, 0, d.frames, d.tr[:len(d.frames)]); err != nil {
		return err
	}
	outs, err := fr.Wait(0, 0)
	clear(d.frames)
	if err != nil {
		return err
	}
	dec := fr.LaneDecoder(0)
	for b, i := range idx {
		j := &batch[i]
		j.tr = d.tr[b]
		if ad != nil {
			v := j.res.AddAttr(j.parent)
			if !ad.Decode(outs, b, v) {
				j.res.DropAttr()
				continue
			}
			v.Model, v.As = d.Model, d.As
			continue
		}
		res := j.res
		start := len(res.Secondary)
		res.Secondary = dec.Decode(outs, b, j.tr, res.Secondary)
		offsetDetections(res.Secondary[start:], j.x, j.y)
		res.AttachSecondary(j.parent, d.Model)
	}
	return nil
}

func grow2[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
