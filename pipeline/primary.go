package pipeline

import (
	"errors"
	"fmt"
)

// ErrNotDetector is returned by AddStream for a model that gives no detections (an ocr,
// embedding or classify model): such a model runs in a cascade only.
var ErrNotDetector = errors.New("the model is not a detector: it runs on crops in a cascade only")

// checkDetector refuses a stream whose model has no detection decoder.
func (p *Pipeline) checkDetector(name string, device int) error {
	eng, err := p.opts.Models.Engine(name, device)
	if err != nil {
		return err
	}
	r := eng.Acquire()
	if r == nil {
		return fmt.Errorf("model %s is closed", name)
	}
	defer r.Release()
	if ar, ok := r.(AttrRunner); (ok && ar.Attr() != nil) || r.Decoder() == nil {
		return fmt.Errorf("pipeline: model %s: %w", name, ErrNotDetector)
	}
	return nil
}
