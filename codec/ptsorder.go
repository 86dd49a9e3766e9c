package codec

// maxReorder bounds the access units a ptsOrder tracks: H.264/H.265 reorder at most 16
// pictures (DPB size), frame threading delays output by up to 16 more.
const maxReorder = 64

// ptsOrder re-stamps the pictures of a stream whose access units carry a constant-rate count
// in decoding order rather than presentation times (raw Annex-B: media.StreamInfo
// PTSInDecodeOrder): it keeps the PTS of the access units fed and not yet shown (a min-heap of
// at most maxReorder) and gives each picture the decoder outputs, in presentation order, the
// smallest. Exact when every access unit fed yields one picture; a picture lost inside the
// decoder is made up for at the next key frame (next) or by the bound (push), counted in stale.
type ptsOrder struct {
	h     []int64 // min-heap of PTS, nanoseconds
	stale int64   // entries dropped without a picture: overflow or key-frame resynchronisation
}

// push records an access unit fed to the decoder. When maxReorder are outstanding, the
// smallest (a picture that never came out) is dropped first.
func (o *ptsOrder) push(pts int64) {
	if len(o.h) >= maxReorder {
		o.pop()
		o.stale++
	}
	o.h = append(o.h, pts)
	for i := len(o.h) - 1; i > 0; {
		p := (i - 1) / 2
		if o.h[p] <= o.h[i] {
			break
		}
		o.h[p], o.h[i] = o.h[i], o.h[p]
		i = p
	}
}

// pop removes the smallest PTS; false when none is outstanding.
func (o *ptsOrder) pop() (int64, bool) {
	n := len(o.h)
	if n == 0 {
		return 0, false
	}
	min := o.h[0]
	o.h[0] = o.h[n-1]
	o.h = o.h[:n-1]
	for i, n := 0, n-1; ; {
		l, s := 2*i+1, i
		if l < n && o.h[l] < o.h[s] {
			s = l
		}
		if r := l + 1; r < n && o.h[r] < o.h[s] {
			s = r
		}
		if s == i {
			break
		}
		o.h[i], o.h[s] = o.h[s], o.h[i]
		i = s
	}
	return min, true
}

// next returns the presentation PTS of the picture the decoder output now, whose own access
// unit was stamped own (the decoder's picture PTS). A key picture resynchronises: the access
// units fed before it in decoding order (smaller stamps) are shown before it, so any still
// outstanding lost their pictures and are dropped. With nothing outstanding own is kept.
func (o *ptsOrder) next(own int64, key bool) int64 {
	if key {
		for len(o.h) > 0 && o.h[0] < own {
			o.pop()
			o.stale++
		}
	}
	if pts, ok := o.pop(); ok {
		return pts
	}
	return own
}

// lose consumes the stamp of a picture the decoder lost (an error surfaced while receiving):
// the next one in presentation order, the likeliest.
func (o *ptsOrder) lose() { o.pop() }

// reset forgets every outstanding access unit (the decoder was flushed).
func (o *ptsOrder) reset() { o.h = o.h[:0] }
