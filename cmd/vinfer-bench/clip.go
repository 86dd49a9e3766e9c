package main

import (
	"fmt"
	"os"
	"time"

	"github.com/vinfer/vinfer/internal/annexb"
	"github.com/vinfer/vinfer/media"
)

// clip is an H.264 elementary stream split into access units, replayed by every bench stream.
type clip struct {
	aus []media.AccessUnit
	fps float64
}

// loadClip reads an Annex-B .h264 file (scripts/gpu/testdata.sh makes the 1080p30 one) and
// stamps the units at fps.
func loadClip(path string, fps float64) (*clip, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	units, key := annexb.SplitH264(b)
	if len(units) == 0 || !key[0] {
		return nil, fmt.Errorf("%s: no access units, or the first is not an IDR picture", path)
	}
	c := &clip{fps: fps}
	for i, u := range units {
		pts := time.Duration(float64(i) / fps * float64(time.Second))
		c.aus = append(c.aus, media.AccessUnit{Codec: media.CodecH264, Data: u, PTS: pts, DTS: pts, Key: key[i]})
	}
	return c, nil
}
