package gpu

import (
	"fmt"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/preprocess"
)

// Q20 BT.601 coefficients, as preprocess.CPU (OpenCV's cvtColor for limited range, ITU-T T.871
// for full range).
var (
	limitedQ20 = [5]int32{1220542, 1673527, -852492, -409993, 2116026} // cy, cvr, cvg, cug, cub
	fullQ20    = [5]int32{1 << 20, q20(1.402), q20(-0.714136), q20(-0.344136), q20(1.772)}
)

func q20(v float64) int32 {
	if v < 0 {
		return -int32(-v*(1<<20) + 0.5)
	}
	return int32(v*(1<<20) + 0.5)
}

// params are the kernel's arguments for one source size (struct Params in
// cuda/kernels/preprocess.cu, field for field).
type params struct {
	srcW, srcH     int32
	dstW, dstH     int32
	offX, offY     int32
	rw, rh         int32
	scaleX, scaleY float64
	invX, invY     float64
	area           bool
	scale          float32
	mean, std      [3]float32
	bgr            bool
	pad            int32
	place          preprocess.Placement
	transform      preprocess.Transform
}

// plan computes the kernel geometry for a srcW×srcH picture, with the CPU path's Placement so
// both paths put the picture at the same pixels. It fails for INTER_AREA shrinking (box
// filtering), which the kernel does not implement.
func plan(spec preprocess.Spec, srcW, srcH int) (params, error) {
	if srcW <= 0 || srcH <= 0 {
		return params{}, fmt.Errorf("preprocess/gpu: frame size %dx%d must be positive", srcW, srcH)
	}
	pl := spec.Place(srcW, srcH)
	p := params{
		srcW: int32(srcW), srcH: int32(srcH),
		dstW: int32(spec.Width), dstH: int32(spec.Height),
		offX: int32(pl.X), offY: int32(pl.Y), rw: int32(pl.Width), rh: int32(pl.Height),
		scale: spec.Scale, mean: spec.Mean, std: spec.Std,
		bgr: spec.Color == preprocess.BGR, pad: int32(spec.Pad),
		place: pl, transform: pl.Transform(srcW, srcH),
	}
	if spec.Interp == preprocess.Area {
		if pl.Width <= srcW && pl.Height <= srcH {
			return params{}, fmt.Errorf("preprocess/gpu: INTER_AREA downscaling (%dx%d to %dx%d) is not implemented on the GPU; use Interp Bilinear or the CPU preprocessor", srcW, srcH, pl.Width, pl.Height)
		}
		p.area = true
	}
	// As OpenCV (and preprocess.CPU): inv = dst/src, scale = 1/inv, both float64.
	p.invX = float64(pl.Width) / float64(srcW)
	p.invY = float64(pl.Height) / float64(srcH)
	p.scaleX = 1 / p.invX
	p.scaleY = 1 / p.invY
	return p, nil
}

// pack appends the kernel arguments: Params by value, the destination pointer, the pad value.
func (p *params) pack(a *cuda.Args, y, uv cuda.Ptr, yPitch, uvPitch int, fullRange bool, dst cuda.Ptr) {
	a.Reset()
	a.Ptr(y).Ptr(uv).I32(int32(yPitch)).I32(int32(uvPitch))
	a.I32(p.srcW).I32(p.srcH).I32(p.dstW).I32(p.dstH)
	a.I32(p.offX).I32(p.offY).I32(p.rw).I32(p.rh)
	a.F64(p.scaleX).F64(p.scaleY).F64(p.invX).F64(p.invY)
	a.I32(b2i(p.area)).I32(b2i(fullRange))
	q := limitedQ20
	if fullRange {
		q = fullQ20
	}
	for _, c := range q {
		a.I32(c)
	}
	a.F32(p.scale).F32(p.mean[0]).F32(p.mean[1]).F32(p.mean[2]).F32(p.std[0]).F32(p.std[1]).F32(p.std[2])
	a.I32(b2i(p.bgr))
	a.Ptr(dst).I32(p.pad)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
