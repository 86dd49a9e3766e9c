// Package imageio loads still images (JPEG, PNG, GIF) as BGR24 frames, for running models on
// pictures (vinfer detect) with the pixels OpenCV's cv2.imread would give.
//
// Go's image/jpeg decodes with its own integer IDCT and returns the chroma planes at their
// coded size. Converting those with Go's color.YCbCr (nearest chroma) moves edges by up to a
// pixel compared with libjpeg. FromImage instead upsamples chroma like libjpeg(-turbo)'s default
// "fancy" triangle filter and converts with libjpeg's fixed-point JFIF equations, so the only
// difference left from cv2.imread is the IDCT's rounding (see the package tests for the
// measured differences on the shared assets).
package imageio

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // register GIF
	_ "image/jpeg" // register JPEG
	_ "image/png"  // register PNG
	"io"
	"os"

	"github.com/vinfer/vinfer/frame"
)

// Load reads and decodes the image file at path into a BGR24 frame (one plane, stride 3·width,
// Device −1, not from a pool: never Release it). Errors name the file and say whether it is
// missing, unreadable or not a JPEG, PNG or GIF image.
func Load(path string) (*frame.Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("imageio: image file %s does not exist", path)
		}
		return nil, fmt.Errorf("imageio: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("imageio: %s is a directory, not an image file", path)
	}
	fr, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return fr, nil
}

// Decode decodes a JPEG, PNG or GIF image from r into a BGR24 frame (see Load).
func Decode(r io.Reader) (*frame.Frame, error) {
	br := bufio.NewReader(r)
	img, format, err := image.Decode(br)
	if err != nil {
		if errors.Is(err, image.ErrFormat) {
			head, _ := br.Peek(8)
			return nil, fmt.Errorf("imageio: not a JPEG, PNG or GIF image (starts with % x)", head)
		}
		return nil, fmt.Errorf("imageio: decoding %s: %w", formatName(format), err)
	}
	if b := img.Bounds(); b.Empty() {
		return nil, fmt.Errorf("imageio: %s image is empty (%dx%d)", formatName(format), b.Dx(), b.Dy())
	}
	return FromImage(img), nil
}

func formatName(f string) string {
	if f == "" {
		return "image"
	}
	return f
}

// FromImage converts img into a new BGR24 frame of the same size (see Load). Alpha is
// dropped without blending and 16-bit samples keep their high byte, as cv2.imread with
// IMREAD_COLOR does. *image.YCbCr (JPEG) is converted as libjpeg would (see the package doc).
func FromImage(img image.Image) *frame.Frame {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	fr := &frame.Frame{Format: frame.FormatBGR24, Width: w, Height: h, Device: -1}
	fr.Planes[0] = make([]byte, 3*w*h)
	fr.Strides[0] = 3 * w
	dst := fr.Planes[0]
	switch m := img.(type) {
	case *image.YCbCr:
		ycbcrToBGR(dst, m)
	case *image.Gray:
		for y := range h {
			row := m.Pix[(y)*m.Stride : y*m.Stride+w]
			d := dst[3*w*y : 3*w*(y+1)]
			for x, g := range row {
				d[3*x], d[3*x+1], d[3*x+2] = g, g, g
			}
		}
	case *image.NRGBA:
		fromRGBA(dst, m.Pix, m.Stride, w, h)
	case *image.RGBA:
		// Opaque PNGs decode to RGBA; with alpha < 255 the values are premultiplied, which
		// cv2.imread would not do, so take the general path.
		if m.Opaque() {
			fromRGBA(dst, m.Pix, m.Stride, w, h)
			break
		}
		fromAny(dst, img)
	default:
		fromAny(dst, img)
	}
	return fr
}

// fromRGBA copies 8-bit R, G, B, A rows into packed B, G, R.
func fromRGBA(dst, pix []byte, stride, w, h int) {
	for y := range h {
		row := pix[y*stride : y*stride+4*w]
		d := dst[3*w*y : 3*w*(y+1)]
		for x := range w {
			s := row[4*x : 4*x+3 : 4*x+3]
			d[3*x], d[3*x+1], d[3*x+2] = s[2], s[1], s[0]
		}
	}
}

// fromAny converts any image through non-premultiplied 16-bit color, keeping the high byte.
func fromAny(dst []byte, img image.Image) {
	b := img.Bounds()
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64)
			dst[i], dst[i+1], dst[i+2] = uint8(c.B>>8), uint8(c.G>>8), uint8(c.R>>8)
			i += 3
		}
	}
}
