package motion

// PlaneSize returns the downscaled plane a fw×fh frame gives: w×h plane pixels, each the mean
// of a step×step block of frame pixels from the top-left corner.
func (d *Detector) PlaneSize(fw, fh int) (w, h, step int) {
	step = max(1, fw/d.cfg.Width)
	return max(1, fw/step), max(1, fh/step), step
}

// SampledRows is where a frame's luma rows are sampled for ProcessPlane (a frame in device
// memory): h rows, the middle row of each block (row step/2 + k·step), the first w·step
// pixels of each.
func SampledRows(w, h, step int) (first, every, width, rows int) {
	return step / 2, step, w * step, h
}

// AverageRows fills plane (w×h, packed) from the sampled rows (SampledRows: h rows of w·step
// pixels, pitch bytes apart): each plane pixel is the mean of its block's row, every other
// pixel for blocks of side ≥ 4 as Process reads them. It allocates nothing.
func AverageRows(plane, rows []byte, pitch, w, h, step int) {
	inc := 1
	if step >= 4 {
		inc = 2
	}
	per := uint32((step + inc - 1) / inc)
	for y := 0; y < h; y++ {
		line := rows[y*pitch : y*pitch+w*step]
		out := plane[y*w : (y+1)*w]
		for x := range out {
			blk := line[x*step : x*step+step]
			var sum uint32
			for i := 0; i < len(blk); i += inc {
				sum += uint32(blk[i])
			}
			out[x] = uint8(sum / per)
		}
	}
}

// ProcessPlane is Process for a frame whose luma was downscaled elsewhere (a frame in device
// memory whose sampled rows came to the host: AverageRows): plane holds PlaneSize(fw, fh)'s
// w×h pixels, packed. Boxes and the mask stay in frame pixels. A plane of the wrong size
// returns an empty result.
func (d *Detector) ProcessPlane(plane []byte, fw, fh int) Result {
	w, h, _ := d.PlaneSize(fw, fh)
	if fw <= 0 || fh <= 0 || len(plane) < w*h {
		return Result{}
	}
	learning := false
	if fw != d.fw || fh != d.fh {
		d.resize(fw, fh)
		learning = true
	}
	copy(d.cur, plane[:w*h])
	if learning {
		for i, v := range d.cur {
			d.bg[i] = uint16(v) << 8
		}
		return Result{Learning: true}
	}
	return d.compare()
}
