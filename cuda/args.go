package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Args packs kernel parameters into one buffer laid out as the CUDA ABI expects (each value at
// its natural alignment, in declaration order), for Function.Launch. Reuse one Args per launch
// site (Reset, then the Put calls): it does not allocate.
type Args struct {
	buf [256]byte
	n   int
	err error
}

// Reset empties the buffer for the next launch.
func (a *Args) Reset() *Args { a.n, a.err = 0, nil; return a }

func (a *Args) put(size int) []byte {
	off := (a.n + size - 1) &^ (size - 1)
	if off+size > len(a.buf) {
		if a.err == nil {
			a.err = fmt.Errorf("cuda: kernel parameters exceed %d bytes", len(a.buf))
		}
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
func (a *Args) Err() error { return a.err }

func (a *Args) bytes() (*byte, int) { return &a.buf[0], a.n }
