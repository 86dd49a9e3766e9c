package codec

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/motion"
	"github.com/vinfer/vinfer/source/file"
)

// firstUnits reads a file's first n access units through source/file.
func firstUnits(t *testing.T, path string, n int) []media.AccessUnit {
	t.Helper()
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var aus []media.AccessUnit
	for len(aus) < n {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = bytes.Clone(au.Data)
		aus = append(aus, c)
	}
	return aus
}

// TestNVDECSharedSampleLuma (GPU): a Shared NVDEC decoder handed from one goroutine to another
// midway through a GOP (as decpool hands decoders between streams) decodes on, and every
// picture's sampled luma rows (SampleLuma: the motion check's copy to the host) equal the
// software decoder's rows of the same picture (H.264 decoding is bit-exact); a key frame
// decoded alone and drained on a third goroutine (an idle stream's probe) gives its picture
// again. The clip: $VINFER_GPU30_CLIP (scripts/gpu/build-30.sh's 1080p camera), else the
// bundled sample.
func TestNVDECSharedSampleLuma(t *testing.T) {
	dev := device(t)
	path := os.Getenv("VINFER_GPU30_CLIP")
	if path == "" {
		path = filepath.Join(repoRoot(t), "assets", "videos", "one-by-one-person-detection.mp4")
	}
	aus := firstUnits(t, path, 40)
	det, _ := motion.New(motion.Config{})
	rows := func(f *frame.Frame) (first, every, width, n int) {
		w, h, step := det.PlaneSize(f.Width, f.Height)
		first, every, width, n = motion.SampledRows(w, h, step)
		if first+(n-1)*every >= f.Height {
			n--
		}
		return
	}
	var want [][]byte
	sw := &Decoder{Codec: media.CodecH264}
	if err := sw.Init(); err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	soft := func(f *frame.Frame) error {
		defer f.Release()
		first, every, width, n := rows(f)
		var b []byte
		for y := 0; y < n; y++ {
			r := (first + y*every) * f.Strides[0]
			b = append(b, f.Planes[0][r:r+width]...)
		}
		want = append(want, b)
		return nil
	}
	for i := range aus {
		if err := sw.Decode(context.Background(), &aus[i], soft); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Flush(context.Background(), soft); err != nil {
		t.Fatal(err)
	}

	nv := &NVDECStream{Device: dev, Codec: media.CodecH264, Shared: true}
	if err := nv.Init(); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	var sampleErr error
	gpu := func(f *frame.Frame) error {
		defer f.Release()
		first, every, width, n := rows(f)
		b := make([]byte, width*n)
		if err := f.Backing.(*avFrame).SampleLuma(f, b, first, every, width, n); err != nil && sampleErr == nil {
			sampleErr = err
		}
		got = append(got, b)
		return nil
	}
	on := func(fn func() error) error { // a goroutine of its own, as another stream's
		done := make(chan error, 1)
		go func() { done <- fn() }()
		return <-done
	}
	half := len(aus) / 2
	for _, part := range [][]media.AccessUnit{aus[:half], aus[half:]} {
		err := on(func() error {
			for i := range part {
				if err := nv.Decode(context.Background(), &part[i], gpu); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := on(func() error { return nv.Flush(context.Background(), gpu) }); err != nil {
		t.Fatal(err)
	}
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	if len(got) != len(want) {
		t.Fatalf("NVDEC: %d pictures, software %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("picture %d: sampled rows differ from the software decoder's", i)
		}
	}
	got = got[:0]
	err := on(func() error {
		if err := nv.Decode(context.Background(), &aus[0], gpu); err != nil {
			return err
		}
		return nv.Flush(context.Background(), gpu)
	})
	if err != nil || len(got) != 1 || !bytes.Equal(got[0], want[0]) {
		t.Fatalf("probe of the key frame: %v, %d pictures (equal: %v)", err, len(got), len(got) == 1 && bytes.Equal(got[0], want[0]))
	}
	if err := on(nv.Close); err != nil {
		t.Fatal(err)
	}
}
