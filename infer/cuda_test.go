package infer

import (
	"errors"
	"math"
	"os"
	"testing"
	"unsafe"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/internal/ort"
)

func TestPickCUDADevice(t *testing.T) {
	devs := []ort.EpDevice{{EpName: "CPUExecutionProvider"}, {EpName: "CUDAExecutionProvider", EpVendor: "a"},
		{EpName: "CUDAExecutionProvider", EpVendor: "b"}}
	for _, tc := range []struct {
		ordinal int
		vendor  string
	}{{0, "a"}, {1, "b"}, {2, ""}, {-1, ""}} {
		d, err := pickCUDADevice(devs, tc.ordinal)
		if tc.vendor == "" {
			if !errors.Is(err, ErrProviderUnavailable) {
				t.Errorf("ordinal %d: %v, want ErrProviderUnavailable", tc.ordinal, err)
			}
			continue
		}
		if err != nil || d.EpVendor != tc.vendor {
			t.Errorf("ordinal %d: %+v, %v", tc.ordinal, d, err)
		}
	}
}

// TestCUDAProviderMissingLibrary: without the plugin library, Open fails with
// ErrProviderUnavailable so that callers fall back to the CPU.
func TestCUDAProviderMissingLibrary(t *testing.T) {
	t.Setenv(CUDAEPLibraryEnv, "/nonexistent/libonnxruntime_providers_cuda.so")
	_, err := Open(Config{Path: modelPath(t, "yolox_nano_416.onnx"), Provider: ProviderCUDA})
	if !errors.Is(err, ErrProviderUnavailable) {
		t.Fatalf("Open: %v, want ErrProviderUnavailable", err)
	}
}

// TestBoundRunMatchesRun drives DeviceRun's binding logic with host memory (a CPU MemoryInfo
// instead of a CUDA one): the outputs written into the caller's buffers must equal Run's.
func TestBoundRunMatchesRun(t *testing.T) {
	s, err := Open(Config{Path: modelPath(t, "yolox_nano_416.onnx"), IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Input(1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = float32(i % 251)
	}
	outs, err := s.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), outs[0].Data...)

	inBuf := ort.Alloc(4 * len(in))
	defer ort.Free(inBuf)
	copy(unsafe.Slice((*float32)(inBuf), len(in)), in)
	outBuf := ort.Alloc(4 * len(want))
	defer ort.Free(outBuf)
	mem, err := ort.NewCPUMemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.newBoundRun(mem, inBuf, []unsafe.Pointer{outBuf})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if r.OutputBytes(0, 1) != 4*len(want) {
		t.Fatalf("OutputBytes %d, want %d", r.OutputBytes(0, 1), 4*len(want))
	}
	if err := r.Run(1); err != nil {
		t.Fatal(err)
	}
	got := unsafe.Slice((*float32)(outBuf), len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("output[%d] = %v, Run gave %v", i, got[i], want[i])
		}
	}
	clear(got)
	if err := r.Queue(1); err != nil { // on the CPU provider, queued work is done on return
		t.Fatal(err)
	}
	if got[0] != want[0] || got[len(want)-1] != want[len(want)-1] {
		t.Errorf("Queue: output differs from Run")
	}
	if err := r.Run(2); err == nil {
		t.Error("batch 2 accepted by a batch-1 model")
	}
	if allocs := testing.AllocsPerRun(5, func() { r.Run(1) }); allocs != 0 {
		t.Errorf("%v allocations per Run", allocs)
	}
}

func TestBoundRunRejectsDynamicOutputs(t *testing.T) {
	s, err := Open(Config{Path: tinyModel(t), IntraOpThreads: 1, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mem, err := ort.NewCPUMemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	buf := ort.Alloc(4096)
	defer ort.Free(buf)
	if _, err := s.newBoundRun(mem, buf, []unsafe.Pointer{buf, buf, buf}); err == nil {
		t.Error("a data-dependent output was bound")
	}
}

// TestDeviceRunCUDA runs YOLOX-Nano on the GPU through the plugin EP with input and output in
// device memory and compares with the CPU. It needs a CUDA device and the plugin library.
// $VINFER_TEST_CUDA_MODEL replaces the model: the ORT 1.29 CUDA EP plugin under the ORT 1.30
// core crashes in Slice (docs/benchmarks-gpu.md), so on such a machine pass the copy made by
// `vinfer dynamic-batch` (Focus as a Conv).
func TestDeviceRunCUDA(t *testing.T) {
	d, err := cuda.Open(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	defer d.Close()
	model := os.Getenv("VINFER_TEST_CUDA_MODEL")
	if model == "" {
		model = modelPath(t, "yolox_nano_416.onnx")
	}
	s, err := Open(Config{Path: model, Provider: ProviderCUDA})
	if errors.Is(err, ErrProviderUnavailable) {
		t.Skipf("CUDA EP unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref, err := Open(Config{Path: model, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	in, _ := ref.Input(1)
	for i := range in {
		in[i] = float32(i % 251)
	}
	outs, err := ref.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	want := outs[0].Data
	err = d.RunLocked(func() error {
		st, err := d.NewStream()
		if err != nil {
			return err
		}
		defer st.Destroy()
		host, err := d.AllocHost(max(4*len(in), 4*len(want)))
		if err != nil {
			return err
		}
		defer host.Free()
		inDev, err := d.Alloc(4 * len(in))
		if err != nil {
			return err
		}
		defer inDev.Free(nil)
		outDev, err := d.Alloc(4 * len(want))
		if err != nil {
			return err
		}
		defer outDev.Free(nil)
		copy(host.Float32s(), in)
		if err := st.CopyHtoD(inDev.Ptr, host, 4*len(in)); err != nil {
			return err
		}
		if err := st.Synchronize(); err != nil {
			return err
		}
		r, err := s.NewDeviceRun(d.Ordinal(), inDev.Ptr, []cuda.Ptr{outDev.Ptr})
		if err != nil {
			return err
		}
		defer r.Release()
		if err := r.Run(1); err != nil {
			return err
		}
		if err := st.CopyDtoH(host, outDev.Ptr, 4*len(want)); err != nil {
			return err
		}
		if err := st.Synchronize(); err != nil {
			return err
		}
		got := host.Float32s()[:len(want)]
		var worst float64
		for i := range want {
			worst = max(worst, math.Abs(float64(got[i]-want[i])))
		}
		if worst > 0.1 {
			t.Errorf("GPU output differs from the CPU by up to %v", worst)
		}
		// The same on the worker's own stream, queued without waiting and replayed as a CUDA
		// graph (queued runs without a graph abort inside the ORT 1.29 CUDA EP plugin): the copy
		// after it on the stream sees the outputs.
		opts := StreamOptions(st)
		opts["enable_cuda_graph"] = "1"
		qs, err := Open(Config{Path: model, Provider: ProviderCUDA, ProviderOptions: opts})
		if err != nil {
			return err
		}
		defer qs.Close()
		qr, err := qs.NewDeviceRun(d.Ordinal(), inDev.Ptr, []cuda.Ptr{outDev.Ptr})
		if err != nil {
			return err
		}
		defer qr.Release()
		if err := qr.UseGraph(1); err != nil {
			return err
		}
		if err := st.Fill32(outDev.Ptr, 0, len(want)); err != nil {
			return err
		}
		for range 3 {
			if err := qr.Queue(1); err != nil {
				return err
			}
		}
		if err := st.CopyDtoH(host, outDev.Ptr, 4*len(want)); err != nil {
			return err
		}
		if err := st.Synchronize(); err != nil {
			return err
		}
		worst = 0
		for i := range want {
			worst = max(worst, math.Abs(float64(host.Float32s()[i]-want[i])))
		}
		if worst > 0.1 {
			t.Errorf("queued GPU output differs from the CPU by up to %v", worst)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
