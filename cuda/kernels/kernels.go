// Package kernels embeds vinfer's CUDA kernels as PTX built from the .cu sources beside it.
//
// Rebuild after editing a .cu file (needs nvcc from CUDA 13; vinfer's build needs none):
//
//	nvcc -ptx -arch=compute_75 -O3 -o cuda/kernels/preprocess.ptx cuda/kernels/preprocess.cu
//
// compute_75 is the lowest virtual architecture CUDA 13 supports: the driver JIT-compiles the
// PTX for the GPU at hand (sm_90 on an H200) when the module loads. PTX from nvcc 13 needs a
// driver for CUDA 13 (r580 or newer).
package kernels

import (
	_ "embed"
	"errors"
	"os"
	"strings"
)

//go:embed preprocess.ptx
var preprocessPTX []byte

// Preprocess returns the PTX of preprocess.cu (kernels nv12_nchw_f32 and nv12_nchw_f16). The
// environment variable VINFER_PREPROCESS_PTX names a file to load instead (to test a freshly
// built PTX without rebuilding vinfer).
func Preprocess() ([]byte, error) {
	b := preprocessPTX
	if p := os.Getenv("VINFER_PREPROCESS_PTX"); p != "" {
		var err error
		if b, err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	if !strings.Contains(string(b), ".entry") {
		return nil, errors.New("cuda/kernels: preprocess.ptx holds no kernel; rebuild it with nvcc (see cuda/kernels/kernels.go)")
	}
	return b, nil
}
