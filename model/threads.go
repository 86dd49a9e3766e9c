package model

import "runtime"

// ClampThreads bounds a thread count to the machine: more threads than cores only contend
// (and tens of thousands never start). 0 keeps ONNX Runtime's default.
func ClampThreads(n int) int {
	if n <= 0 {
		return n
	}
	return min(n, runtime.NumCPU())
}
