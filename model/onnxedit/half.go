package onnxedit

import (
	"encoding/binary"
	"math"
)

// MaxFloat16 is the largest finite float16 (IEEE 754 binary16).
const MaxFloat16 = 65504

// Float16 returns the IEEE 754 binary16 bits nearest f (round half to even). A finite f beyond
// ±65504 gives ±65504 and clamped; infinities and NaN stay so; magnitudes below 2⁻²⁵ give
// ±0, those below 2⁻¹⁴ subnormals.
func Float16(f float32) (h uint16, clamped bool) {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b>>23&0xff == 0xff: // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00, false
		}
		return sign | 0x7c00, false
	case math.Abs(float64(f)) > MaxFloat16:
		return sign | 0x7bff, true
	case exp >= 1:
		m, rem := mant>>13, mant&0x1fff
		if rem > 0x1000 || rem == 0x1000 && m&1 == 1 {
			m++ // may carry into the exponent, which is right
		}
		v := uint32(exp)<<10 + m
		if v >= 0x7c00 {
			return sign | 0x7bff, true // rounded up past 65504
		}
		return sign | uint16(v), false
	case exp < -10:
		return sign, false
	}
	mant |= 0x800000
	shift := uint(14 - exp)
	m, rem, half := mant>>shift, mant&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || rem == half && m&1 == 1 {
		m++
	}
	return sign | uint16(m), false
}

// Float32 returns the value of float16 bits h.
func Float32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
