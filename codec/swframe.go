package codec

import (
	"errors"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/frame"
)

// swFrame is the native backing of a Decoder's frame: an AVFrame that holds references to the
// decoder's picture buffers (or, for converted pictures, its own buffer).
type swFrame struct{ f *astiav.Frame }

// Reset drops the picture (av_frame_unref): its buffers return to the decoder's buffer pool.
func (b *swFrame) Reset() { b.f.Unref() }

// Free releases the AVFrame (av_frame_free).
func (b *swFrame) Free() { b.f.Free() }

func newSWFrame() (frame.Backing, error) {
	f := astiav.AllocFrame()
	if f == nil {
		return nil, errors.New("codec: av_frame_alloc failed (out of memory)")
	}
	return &swFrame{f: f}, nil
}

// wallclocks remembers the capture time of recent access units by PTS, so that it follows
// the pictures through the decoder's reordering.
type wallclocks struct {
	pts  [32]int64
	wall [32]time.Time
	next int
}

func (w *wallclocks) put(pts int64, t time.Time) {
	w.pts[w.next], w.wall[w.next] = pts, t
	w.next = (w.next + 1) % len(w.pts)
}

// get returns the capture time recorded for pts, zero when none.
func (w *wallclocks) get(pts int64) time.Time {
	for i, p := range w.pts {
		if p == pts && !w.wall[i].IsZero() {
			return w.wall[i]
		}
	}
	return time.Time{}
}
