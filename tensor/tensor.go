// Package tensor holds the plain tensor types shared by inference and post-processing.
package tensor

// Info describes a model input or output: its name, element type and shape. A dimension of -1
// is dynamic (symbolic in the ONNX graph, typically the batch).
type Info struct {
	Name  string
	Shape []int64
	// Type is the ONNX element type name ("float32", "float16", "int64", ...).
	Type string
}

// Tensor is a float32 tensor in row-major (C) order, Data holding ∏Shape elements. Data may
// point into native memory owned by the producer (an inference session's output buffer): it is
// valid until that producer's next run.
type Tensor struct {
	Info
	Data []float32
}

// Elements returns the number of elements a shape holds; -1 when a dimension is dynamic.
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return -1
		}
		n *= d
	}
	return n
}
