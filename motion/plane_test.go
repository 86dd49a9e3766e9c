package motion

import (
	"math/rand/v2"
	"testing"
)

// sampled runs the device path on the host: the rows SampledRows names, copied out of f as
// an NVDEC frame's are, averaged into the plane and processed.
func sampled(d *Detector, f []byte, stride, fw, fh int, rows, plane []byte) Result {
	w, h, step := d.PlaneSize(fw, fh)
	first, every, width, n := SampledRows(w, h, step)
	for y := 0; y < n; y++ {
		r := (first + y*every) * stride
		copy(rows[y*width:(y+1)*width], f[r:r+width])
	}
	AverageRows(plane, rows, width, w, h, step)
	return d.ProcessPlane(plane, fw, fh)
}

// TestProcessPlane: a 1080p frame's motion found from one sampled row per block (the rows a
// GPU frame sends to the host: 1920×90 bytes, not the 2 MB luma) agrees with Process on the
// whole plane: no motion on noise, the moving square's box, nothing in the mask, a lighting
// change taken for lighting; and the plane path allocates nothing.
func TestProcessPlane(t *testing.T) {
	const fw, fh = 1920, 1080
	f := newFrame(fw, fh)
	mask := []Polygon{{{1200, 0}, {1920, 0}, {1920, 400}, {1200, 400}}}
	full, _ := New(Config{Mask: mask})
	dev, _ := New(Config{Mask: mask})
	w, h, step := dev.PlaneSize(fw, fh)
	if w != 160 || h != 90 || step != 12 {
		t.Fatalf("plane %dx%d step %d, want 160x90 step 12", w, h, step)
	}
	rows, plane := make([]byte, w*step*h), make([]byte, w*h)
	rng := rand.New(rand.NewPCG(3, 4))
	steps := []struct {
		name           string
		light, x, y, s int
		moving, lights bool
	}{
		{name: "first"}, {name: "noise"}, {name: "noise again"},
		{name: "square", x: 600, y: 500, s: 160, moving: true},
		{name: "square moved", x: 700, y: 520, s: 160, moving: true},
		{name: "square in the mask", x: 1500, y: 100, s: 160},
		{name: "lights on", light: 80, lights: true},
	}
	for i, st := range steps {
		scene(f, rng, 6, st.light, st.x, st.y, st.s)
		a := full.Process(f)
		b := sampled(dev, f.Planes[0], f.Strides[0], fw, fh, rows, plane)
		if i == 0 {
			if !b.Learning {
				t.Fatalf("first plane: %+v, want learning", b)
			}
			continue
		}
		if a.Moving() != st.moving || b.Moving() != st.moving || b.Lighting != st.lights || a.Lighting != st.lights {
			t.Errorf("%s: plane %+v, full %+v; want moving %v, lighting %v", st.name, b, a, st.moving, st.lights)
		}
		if st.moving {
			bx := b.Boxes[0]
			if bx.X1 <= st.x || bx.Y1 <= st.y || bx.X0 >= st.x+st.s || bx.Y0 >= st.y+st.s || bx.X1-bx.X0 > 3*st.s {
				t.Errorf("%s: box %+v is not on the square at %d,%d", st.name, bx, st.x, st.y)
			}
		}
	}
	if n := testing.AllocsPerRun(20, func() { sampled(dev, f.Planes[0], f.Strides[0], fw, fh, rows, plane) }); n != 0 {
		t.Errorf("plane path: %v allocations per frame", n)
	}
}

// BenchmarkProcessPlane is the host's share of a GPU frame's motion check at 1080p: averaging
// the 90 sampled rows of 1920 bytes into the 160×90 plane and comparing it (the copy of the
// rows from device memory is the GPU run's: scripts/gpu/check-30.sh).
func BenchmarkProcessPlane(b *testing.B) {
	const fw, fh = 1920, 1080
	d, _ := New(Config{})
	w, h, step := d.PlaneSize(fw, fh)
	_, _, width, n := SampledRows(w, h, step)
	rows, plane := make([]byte, width*n), make([]byte, w*h)
	for i := range rows {
		rows[i] = uint8(i * 7 % 251)
	}
	AverageRows(plane, rows, width, w, h, step)
	d.ProcessPlane(plane, fw, fh)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows[i%len(rows)] ^= 0xff
		AverageRows(plane, rows, width, w, h, step)
		d.ProcessPlane(plane, fw, fh)
	}
}
