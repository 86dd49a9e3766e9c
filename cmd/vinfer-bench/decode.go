package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
)

type decodeResult struct {
	Mode        string  `json:"mode"`
	Decoder     string  `json:"decoder"`
	Device      string  `json:"device,omitempty"`
	GPUs        int     `json:"gpus"`
	Streams     int     `json:"streams"`
	DecFrames   int     `json:"decoder_frames"`
	Clip        string  `json:"clip"`
	Frames      int64   `json:"frames"`
	Seconds     float64 `json:"seconds"`
	FPS         float64 `json:"fps"`
	PerStream   float64 `json:"fps_per_stream"`
	SteadyFPS   float64 `json:"steady_fps"`
	HtoDPerFrm  float64 `json:"htod_copies_per_frame"`
	DtoHPerFrm  float64 `json:"dtoh_copies_per_frame"`
	DeviceAlloc uint64  `json:"device_allocs_during_run"`
}

// videoDecoder is what the pipeline's streams decode with (pipeline.VideoDecoder).
type videoDecoder interface {
	Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error
	Flush(ctx context.Context, emit func(*frame.Frame) error) error
	Close() error
}

// benchDecode plays the clip in a loop on N streams for o.duration, each through the product's
// file source and stream decoder on the GPU cuda.Devices picks for it (round-robin), every
// frame released as soon as it comes out.
func benchDecode(o options) (*decodeResult, error) {
	devs := &cuda.Devices{}
	defer devs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var decoded atomic.Int64
	counts := make([]int64, o.streams)
	errs := make([]error, o.streams)
	var wg sync.WaitGroup
	before := cuda.ReadStats()
	t0 := time.Now()
	for i := range o.streams {
		newDec, err := streamDecoder(o.decoder, devs)
		if err != nil {
			return nil, err
		}
		src, err := source.Open(&config.Stream{ID: fmt.Sprintf("s%03d", i), Source: o.clip, Loop: true}, source.Policy{})
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer src.Close()
			counts[i], errs[i] = decodeStream(ctx, src, newDec, &decoded)
		}()
	}
	steady := window(t0, o.settle, o.duration, &decoded)
	cancel()
	wg.Wait()
	el := time.Since(t0).Seconds()
	st := cuda.ReadStats().Sub(before)
	res := &decodeResult{Mode: "decode", Decoder: o.decoder, Streams: o.streams, DecFrames: codec.DefaultNVDECFrames,
		Clip: o.clip, Seconds: el, SteadyFPS: steady}
	for i := range counts {
		if errs[i] != nil {
			return nil, fmt.Errorf("stream %d: %w", i, errs[i])
		}
		res.Frames += counts[i]
	}
	if res.Frames == 0 {
		return nil, errors.New("no frame decoded")
	}
	if d := devs.Opened(); len(d) > 0 {
		res.Device, res.GPUs = d[0].String(), len(d)
	}
	n := float64(res.Frames)
	res.FPS, res.PerStream = n/el, n/el/float64(o.streams)
	res.HtoDPerFrm, res.DtoHPerFrm = float64(st.HtoD)/n, float64(st.DtoH)/n
	res.DeviceAlloc = st.DeviceAllocs + st.PoolAllocs
	return res, nil
}

// streamDecoder returns how a stream makes its decoder, as the app does: NVDEC on the next GPU,
// or FFmpeg's software decoder.
func streamDecoder(kind string, devs *cuda.Devices) (func(media.Codec) (videoDecoder, error), error) {
	switch kind {
	case "nvdec":
		dev, err := devs.Pick(-1)
		if err != nil {
			return nil, err
		}
		return func(c media.Codec) (videoDecoder, error) {
			d := &codec.NVDECStream{Device: dev, Codec: c}
			return d, d.Init()
		}, nil
	case "cpu":
		return func(c media.Codec) (videoDecoder, error) {
			d := &codec.Decoder{Codec: c}
			return d, d.Init()
		}, nil
	}
	return nil, fmt.Errorf("decoder %q: nvdec or cpu", kind)
}

// decodeStream reads src until ctx ends and decodes every access unit on one goroutine (NVDEC's
// thread rule), counting the frames.
func decodeStream(ctx context.Context, src source.Source, newDec func(media.Codec) (videoDecoder, error), decoded *atomic.Int64) (int64, error) {
	var n int64
	emit := func(f *frame.Frame) error {
		n++
		decoded.Add(1)
		f.Release()
		return nil
	}
	var dec videoDecoder
	defer func() {
		if dec != nil {
			dec.Close()
		}
	}()
	for {
		au, err := src.Read(ctx)
		if ctx.Err() != nil {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		if dec == nil {
			if dec, err = newDec(au.Codec); err != nil {
				dec = nil
				return n, err
			}
		}
		if err := dec.Decode(ctx, au, emit); err != nil && ctx.Err() == nil {
			var de *codec.DecodeError
			if !errors.As(err, &de) {
				return n, err
			}
		}
	}
	if dec != nil {
		return n, dec.Flush(ctx, emit)
	}
	return n, nil
}
