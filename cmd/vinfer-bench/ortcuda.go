package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../third_party/ort/include
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "ortcuda.h"
*/
import "C"

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/cuda"
)

// Inference for the benchmark through ONNX Runtime's C API with the CUDA EP as a plugin EP
// (a minimal shim until internal/ort offers device memory and plugin EPs).
var (
	ortLib = flag.String("ort", "/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0", "ONNX Runtime core library (1.22+)")
	epLib  = flag.String("ep", "/opt/vinfer-gpu/libonnxruntime_providers_cuda.so", "ONNX Runtime CUDA EP plugin library")
)

func init() { newEngine = newORTEngine }

// The ORT environment and the EP registration are process-wide: done once.
var (
	ortOnce sync.Once
	ortErr  error
)

type ortEngine struct {
	s *C.vo_session
	// shared reports that ORT runs on the worker's stream (user_compute_stream); when the EP
	// refuses it, Infer waits for the stream before running and ORT synchronizes its own.
	shared  bool
	out     *cuda.Buffer
	host    *cuda.HostBuffer
	perItem int // output bytes per batch item
	errs    [512]C.char
}

func newORTEngine(cfg config, d *cuda.Device, s *cuda.Stream, input cuda.Ptr, maxBatch int) (engine, error) {
	if cfg.half {
		return nil, errors.New("the ORT engine feeds float32 models; run -half without inference")
	}
	e := &ortEngine{}
	ortOnce.Do(func() {
		ol, el := C.CString(*ortLib), C.CString(*epLib)
		defer C.free(unsafe.Pointer(ol))
		defer C.free(unsafe.Pointer(el))
		if C.vo_init(ol, el, &e.errs[0], C.int(len(e.errs))) != 0 {
			ortErr = fmt.Errorf("onnxruntime: %s", C.GoString(&e.errs[0]))
		}
	})
	if ortErr != nil {
		return nil, ortErr
	}
	// Output buffer: YOLOX-Nano 416 gives 3549x85 float32 per item; sized after the session
	// reports it, so open with a generous buffer first.
	const maxOut = 8 << 20
	var err error
	if e.out, err = d.Alloc(maxBatch * maxOut); err != nil {
		return nil, err
	}
	m := C.CString(cfg.model)
	defer C.free(unsafe.Pointer(m))
	e.shared = true
	if C.vo_open(&e.s, m, C.int(d.Ordinal()), C.uintptr_t(s.Handle()), C.uintptr_t(input), C.uintptr_t(e.out.Ptr),
		C.int(maxBatch), &e.errs[0], C.int(len(e.errs))) != 0 {
		first := C.GoString(&e.errs[0])
		C.vo_close(e.s)
		e.s, e.shared = nil, false
		if C.vo_open(&e.s, m, C.int(d.Ordinal()), 0, C.uintptr_t(input), C.uintptr_t(e.out.Ptr),
			C.int(maxBatch), &e.errs[0], C.int(len(e.errs))) != 0 {
			e.Close()
			return nil, fmt.Errorf("onnxruntime: %s (with user_compute_stream: %s)", C.GoString(&e.errs[0]), first)
		}
		fmt.Fprintf(os.Stderr, "vinfer-bench: ORT refused the shared stream (%s); synchronizing instead\n", first)
	}
	e.perItem = int(C.vo_out_elems(e.s)) * 4
	if e.perItem > maxOut {
		e.Close()
		return nil, fmt.Errorf("model output of %d bytes per item exceeds %d", e.perItem, maxOut)
	}
	if e.host, err = d.AllocHost(maxBatch * e.perItem); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Infer runs the model on n items and queues the only host copy of the frame path: the output
// tensor into pinned memory.
func (e *ortEngine) Infer(s *cuda.Stream, n int) error {
	if !e.shared {
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	if C.vo_run(e.s, C.int(n), &e.errs[0], C.int(len(e.errs))) != 0 {
		return fmt.Errorf("onnxruntime: %s", C.GoString(&e.errs[0]))
	}
	return s.CopyDtoH(e.host, e.out.Ptr, n*e.perItem)
}

func (e *ortEngine) Close() error {
	if e.s != nil {
		C.vo_close(e.s)
		e.s = nil
	}
	if e.host != nil {
		e.host.Free()
	}
	if e.out != nil {
		e.out.Free(nil)
	}
	return nil
}
