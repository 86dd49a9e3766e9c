package api

import (
	"bytes"
	"errors"
	"fmt"
	"image/jpeg"
	"net/http"
	"strconv"
	"time"

	"github.com/vinfer/vinfer/frame"
)

// snapshotWait bounds how long a snapshot waits for the result of the frame it shows (the
// decoder runs a few frames ahead of inference).
const snapshotWait = 2 * time.Second

// snapshot answers GET /api/streams/{id}/snapshot.jpg: the stream's latest decoded frame as a
// JPEG with the boxes and labels of that frame's result drawn. Query parameters: boxes=0 for
// the bare frame, width=N to scale down (aspect kept), quality=1…100 (default 80), wait=0 to
// draw the newest result at once instead of waiting up to 2 s for the frame's own.
// Headers X-Vinfer-Frame and X-Vinfer-PTS identify the frame; X-Vinfer-Result-Frame the result
// drawn (absent when none). Frames in GPU memory (decoder: nvdec) are copied to the host for
// the snapshot (frame.ToHost). 404: unknown stream; 503: no frame decoded yet; 501: a device
// frame its decoder cannot copy.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.streamExists(id) {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	q := r.URL.Query()
	quality, err := intParam(q.Get("quality"), 80, 1, 100)
	if err != nil {
		writeError(w, http.StatusBadRequest, "quality: %v", err)
		return
	}
	width, err := intParam(q.Get("width"), 0, 16, MaxSnapshotSide)
	if err != nil {
		writeError(w, http.StatusBadRequest, "width: %v", err)
		return
	}
	boxes := q.Get("boxes") != "0" && q.Get("boxes") != "false"
	wait := snapshotWait
	if q.Get("wait") == "0" || q.Get("wait") == "false" {
		wait = 0
	}

	release, ok := s.snapshotSlot(r)
	if !ok {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "%d snapshots are being made: retry shortly", s.MaxSnapshots)
		return
	}
	defer release()
	f := s.App.LatestFrame(id)
	if f == nil {
		writeError(w, http.StatusServiceUnavailable, "stream %q has no decoded frame yet (it may still be connecting, or the server runs without keeping frames): retry shortly", id)
		return
	}
	// A frame in GPU memory (an nvdec stream) is copied to the host here, on demand: one frame
	// per snapshot, nothing on the frame path.
	hf, err := frame.ToHost(f)
	f.Release()
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, frame.ErrOnDevice) {
			code = http.StatusNotImplemented
		}
		writeError(w, code, "snapshot of stream %s: %v", id, err)
		return
	}
	index, pts, fw := hf.Index, hf.PTS, hf.Width
	img, err := toRGBA(hf, nil, snapshotStep(hf.Width, hf.Height, width))
	hf.Release()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "snapshot of stream %s: %v", id, err)
		return
	}
	img = scaleTo(img, width)
	h := w.Header()
	h.Set("X-Vinfer-Frame", strconv.FormatInt(index, 10))
	h.Set("X-Vinfer-PTS", strconv.FormatFloat(pts.Seconds(), 'f', 3, 64))
	if boxes {
		ev, ok := s.tracker.wait(r.Context(), id, index, wait)
		var evp *event
		if ok {
			evp = &ev
			h.Set("X-Vinfer-Result-Frame", strconv.FormatInt(ev.Frame, 10))
		}
		caption := fmt.Sprintf("%s  #%d  %.2f s", id, index, pts.Seconds())
		if err := drawResult(img, evp, float64(img.Rect.Dx())/float64(fw), caption); err != nil {
			writeError(w, http.StatusInternalServerError, "drawing the snapshot: %v", err)
			return
		}
	}
	var buf bytes.Buffer
	buf.Grow(img.Rect.Dx() * img.Rect.Dy() / 6)
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the snapshot: %v", err)
		return
	}
	h.Set("Content-Type", "image/jpeg")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// MaxSnapshotSide bounds a snapshot's width and height in pixels: larger frames are sampled down
// while they are converted, so an 8K frame never exists as a full-size image.
const MaxSnapshotSide = 1920

// snapshotStep is the sampling step that brings a w×h frame within MaxSnapshotSide, and no
// further than the width asked for (0: none).
func snapshotStep(w, h, width int) int {
	side := max(w, h)
	step := (side + MaxSnapshotSide - 1) / MaxSnapshotSide
	if width > 0 && w/width > step {
		step = w / width
	}
	return max(step, 1)
}

// snapshotSlot waits up to snapshotWait for one of MaxSnapshots encoding slots: each holds a
// converted frame and its JPEG, so the slots bound the memory snapshots take.
func (s *Server) snapshotSlot(r *http.Request) (release func(), ok bool) {
	t := time.NewTimer(snapshotWait)
	defer t.Stop()
	select {
	case s.snaps <- struct{}{}:
		return func() { <-s.snaps }, true
	case <-t.C:
	case <-r.Context().Done():
	}
	return nil, false
}

// intParam parses an optional integer query parameter within [lo, hi].
func intParam(v string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q: give an integer from %d to %d", v, lo, hi)
	}
	return n, nil
}
