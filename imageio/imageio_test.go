package imageio

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/frame"
)

func repoRoot(t testing.TB) string { return testutil.Root(t) }

type jpegReference struct {
	OpenCV string `json:"opencv"`
	JPEG   []struct {
		Image         string     `json:"image"`
		Width, Height int        `json:"-"`
		Crop          [4]int     `json:"crop"`
		Output        string     `json:"output"`
		MeanBGR       [3]float64 `json:"mean_bgr"`
	} `json:"jpeg"`
}

// TestLoadMatchesOpenCV decodes the shared JPEG assets and compares them with cv2.imread
// (testdata written by preprocess/testdata/gen_reference.py): 48×48 crops pixel by pixel and
// whole-image channel means. Only the IDCT's rounding should differ (measured: at most 3, mean
// under 0.05); the same comparison with Go's own nearest-chroma conversion (max 16, mean
// about 1) is logged for contrast.
func TestLoadMatchesOpenCV(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "jpeg_reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref jpegReference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.JPEG) == 0 {
		t.Fatal("jpeg_reference.json lists no images")
	}
	root := repoRoot(t)
	for _, r := range ref.JPEG {
		t.Run(r.Image, func(t *testing.T) {
			path := filepath.Join(root, "assets", "images", r.Image)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", r.Output))
			if err != nil {
				t.Fatal(err)
			}
			naive := naiveBGR(t, path)
			cx, cy, cw, ch := r.Crop[0], r.Crop[1], r.Crop[2], r.Crop[3]
			var worst, worstNaive int
			var sum, sumNaive float64
			for y := range ch {
				for x := range cw * 3 {
					o := (cy+y)*f.Strides[0] + 3*cx + x
					v := int(want[(y*cw*3)+x])
					d, dn := absInt(int(f.Planes[0][o])-v), absInt(int(naive[o])-v)
					worst, worstNaive = max(worst, d), max(worstNaive, dn)
					sum, sumNaive = sum+float64(d), sumNaive+float64(dn)
				}
			}
			n := float64(cw * ch * 3)
			var mean [3]float64
			for i, v := range f.Planes[0] {
				mean[i%3] += float64(v)
			}
			var meanDiff float64
			for c := range 3 {
				mean[c] /= float64(f.Width * f.Height)
				meanDiff = max(meanDiff, math.Abs(mean[c]-r.MeanBGR[c]))
			}
			t.Logf("vs cv2.imread (OpenCV %s): crop max abs diff %d, mean %.3f (Go nearest-chroma conversion: max %d, mean %.3f); channel means differ by ≤ %.3f",
				ref.OpenCV, worst, sum/n, worstNaive, sumNaive/n, meanDiff)
			if worst > 4 || sum/n > 0.1 {
				t.Errorf("crop differs from cv2.imread by up to %d (mean %.3f), want ≤ 4 (mean ≤ 0.1)", worst, sum/n)
			}
			if meanDiff > 0.02 {
				t.Errorf("channel means differ from cv2.imread by %.3f, want ≤ 0.02", meanDiff)
			}
		})
	}
}

// naiveBGR converts with Go's color.YCbCrToRGB and nearest chroma (image.YCbCr.At).
func naiveBGR(t *testing.T, path string) []byte {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := jpeg.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	out := make([]byte, 0, 3*b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			out = append(out, c.B, c.G, c.R)
		}
	}
	return out
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello, not a picture"), 0o644)
	truncated := filepath.Join(dir, "cut.jpg")
	var buf bytes.Buffer
	jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 64, 64)), nil)
	os.WriteFile(truncated, buf.Bytes()[:buf.Len()/2], 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.jpg"), "does not exist"},
		{dir, "is a directory"},
		{text, "not a JPEG, PNG or GIF image (starts with 68 65 6c 6c"},
		{truncated, "decoding jpeg"},
	} {
		_, err := Load(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Load(%s): error %v, want one naming the file and containing %q", tc.path, err, tc.want)
		}
	}
}

// TestFromImage checks the per-type paths against the general color-model path.
func TestFromImage(t *testing.T) {
	r := image.Rect(3, 5, 3+7, 5+4) // not at the origin
	gray := image.NewGray(r)
	nrgba := image.NewNRGBA(r)
	rgba := image.NewRGBA(r)
	rgba16 := image.NewNRGBA64(r)
	pal := image.NewPaletted(r, color.Palette{color.Black, color.RGBA{200, 10, 30, 255}})
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			v := uint8(x*31 + y*17)
			gray.SetGray(x, y, color.Gray{v})
			nrgba.SetNRGBA(x, y, color.NRGBA{v, v / 2, 255 - v, uint8(x * 20)})
			rgba.SetRGBA(x, y, color.RGBA{v, 255 - v, v / 3, 255})
			rgba16.SetNRGBA64(x, y, color.NRGBA64{uint16(v)<<8 | 0xff, 0x1234, 0xfedc, 0x8000})
			pal.SetColorIndex(x, y, uint8((x+y)%2))
		}
	}
	for name, tc := range map[string]struct {
		img  image.Image
		want func(x, y int) [3]uint8 // B, G, R
	}{
		"gray":  {gray, func(x, y int) [3]uint8 { v := gray.GrayAt(x, y).Y; return [3]uint8{v, v, v} }},
		"nrgba": {nrgba, func(x, y int) [3]uint8 { c := nrgba.NRGBAAt(x, y); return [3]uint8{c.B, c.G, c.R} }}, // alpha dropped, not blended
		"rgba":  {rgba, func(x, y int) [3]uint8 { c := rgba.RGBAAt(x, y); return [3]uint8{c.B, c.G, c.R} }},
		"nrgba64": {rgba16, func(x, y int) [3]uint8 {
			c := rgba16.NRGBA64At(x, y)
			return [3]uint8{uint8(c.B >> 8), uint8(c.G >> 8), uint8(c.R >> 8)}
		}},
		"paletted": {pal, func(x, y int) [3]uint8 {
			if (x+y)%2 == 0 {
				return [3]uint8{0, 0, 0}
			}
			return [3]uint8{30, 10, 200}
		}},
	} {
		f := FromImage(tc.img)
		if f.Format != frame.FormatBGR24 || f.Width != 7 || f.Height != 4 || f.Strides[0] != 21 || f.OnDevice() {
			t.Fatalf("%s: frame %v %dx%d stride %d", name, f.Format, f.Width, f.Height, f.Strides[0])
		}
		for y := range 4 {
			for x := range 7 {
				want := tc.want(r.Min.X+x, r.Min.Y+y)
				got := [3]uint8(f.Planes[0][y*21+3*x:])
				if got != want {
					t.Fatalf("%s (%d,%d): BGR %v, want %v", name, x, y, got, want)
				}
			}
		}
	}
}

// TestYCbCrSubsampling decodes JPEGs of every subsampling Go's decoder produces: a flat color
// must come out flat whatever the upsampling, and odd sizes must not overrun.
func TestYCbCrSubsampling(t *testing.T) {
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422,
		image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410} {
		for _, size := range [][2]int{{1, 1}, {7, 5}, {33, 18}} {
			m := image.NewYCbCr(image.Rect(0, 0, size[0], size[1]), ratio)
			for i := range m.Y {
				m.Y[i] = 120
			}
			for i := range m.Cb {
				m.Cb[i], m.Cr[i] = 90, 200
			}
			f := FromImage(m)
			r, g, b := color.YCbCrToRGB(120, 90, 200)
			for i := 0; i < len(f.Planes[0]); i += 3 {
				px := f.Planes[0][i : i+3]
				if absInt(int(px[0])-int(b)) > 1 || absInt(int(px[1])-int(g)) > 1 || absInt(int(px[2])-int(r)) > 1 {
					t.Fatalf("%v %v: pixel %d is BGR %v, want about %v", ratio, size, i/3, px, []uint8{b, g, r})
				}
			}
		}
	}
}

func TestDecodePNG(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	m.SetNRGBA(0, 0, color.NRGBA{10, 20, 30, 255})
	m.SetNRGBA(1, 0, color.NRGBA{40, 50, 60, 0})
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	f, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Planes[0]; !bytes.Equal(got, []byte{30, 20, 10, 60, 50, 40}) {
		t.Errorf("BGR %v", got)
	}
}
