package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Args packs kernel parameters into one buffer laid out as the CUDA ABI expects (each value at
// its natural alignment, in declaration order), for Function.Launch. Reuse one Args per launch
// site (Reset, then the Put calls): it allocates its buffer once. The buffer is a separate,
// pointer-free allocation, as cgo requires of memory passed to C.
type Args struct {
	buf      *[argsSize]byte
	n        int
	overflow bool
}

const argsSize = 256

// Reset empties the buffer for the next launch.
func (a *Args) Reset() *Args { a.n, a.overflow = 0, false; return a }

func (a *Args) put(size int) []byte {
	if a.buf == nil {
		a.buf = new([argsSize]byte)
	}
	off := (a.n + size - 1) &^ (size - 1)
	if off+size > argsSize {
		a.overflow = true
		return make([]byte, size)
	}
	a.n = off + size
	return a.buf[off : off+size]
}

// Ptr appends a device pointer (8 bytes).
func (a *Args) Ptr(p Ptr) *Args { binary.LittleEndian.PutUint64(a.put(8), uint64(p)); return a }

// I32 appends an int.
func (a *Args) I32(v int32) *Args { binary.LittleEndian.PutUint32(a.put(4), uint32(v)); return a }

// U32 appends an unsigned int.
func (a *Args) U32(v uint32) *Args { binary.LittleEndian.PutUint32(a.put(4), v); return a }

// F32 appends a float.
func (a *Args) F32(v float32) *Args {
	binary.LittleEndian.PutUint32(a.put(4), math.Float32bits(v))
	return a
}

// F64 appends a double.
func (a *Args) F64(v float64) *Args {
	binary.LittleEndian.PutUint64(a.put(8), math.Float64bits(v))
	return a
}

// Len returns the packed size in bytes.
func (a *Args) Len() int { return a.n }

// Err reports an overflow of the parameter buffer.
func (a *Args) Err() error {
	if a.overflow {
		return fmt.Errorf("cuda: kernel parameters exceed %d bytes", argsSize)
	}
	return nil
}

func (a *Args) bytes() (*byte, int) {
	if a.buf == nil {
		a.buf = new([argsSize]byte)
	}
	return &a.buf[0], a.n
}
