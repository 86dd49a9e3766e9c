package pipeline

import (
	"cmp"
	"math"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
)

// reidGalleries bounds the tracks a stream keeps embeddings of.
const reidGalleries = 1024

// reid re-identifies tracks by appearance on top of the motion tracker: every track keeps a
// gallery of its latest embeddings (from a cascade of kind embedding on its detections); when
// the tracker starts a track whose first embedding is within the cosine threshold of the
// gallery of a track not seen on this frame (same class, seen within MaxAge), the new track
// takes that track's id. Each id goes to one detection a frame, so two people are never merged
// on one frame. It runs on the output goroutine, between the tracker and the analyzer.
type reid struct {
	thr    float32
	maxAge time.Duration
	size   int
	onEnd  bool

	alias map[int64]*reidAlias // tracker id → public id
	gal   map[int64]*gallery   // public id → its gallery
	calls int64
	emb   []int // per detection of the frame: index of its embedding in Attrs, -1 none
	sum   []float32
}

type reidAlias struct {
	id   int64
	seen time.Duration
}

type gallery struct {
	vecs  [][]float32 // ring of the latest embeddings
	next  int
	class int
	seen  time.Duration // stream time of the latest sighting
	call  int64         // the frame (reid.calls) of the latest sighting
}

// newReID returns the re-identification of a stream's tracker settings; nil when off.
func newReID(t *config.Tracker) *reid {
	if t == nil || t.ReID == nil {
		return nil
	}
	c := t.ReID
	return &reid{
		thr:    float32(cmp.Or(c.Threshold, config.DefaultReIDThreshold)),
		maxAge: cmp.Or(time.Duration(c.MaxAge), config.DefaultReIDMaxAge),
		size:   cmp.Or(c.Gallery, config.DefaultReIDGallery),
		onEnd:  c.EmbeddingOnEnd,
		alias:  map[int64]*reidAlias{}, gal: map[int64]*gallery{},
	}
}

// begin prepares frame r: its detections' embeddings, and forgets what is older than MaxAge
// (or everything when time went backwards).
func (re *reid) begin(r *sink.Result) {
	re.calls++
	re.emb = re.emb[:0]
	for range r.Detections {
		re.emb = append(re.emb, -1)
	}
	for k, a := range r.Attrs {
		if p := r.AttrParent[k]; a.Kind == attr.KindEmbedding && p >= 0 && p < len(re.emb) && len(a.Vector) > 0 {
			re.emb[p] = k
		}
	}
	if re.calls%64 != 0 {
		return
	}
	for id, g := range re.gal {
		if r.PTS-g.seen > re.maxAge || r.PTS < g.seen {
			delete(re.gal, id)
		}
	}
	for tid, a := range re.alias {
		if r.PTS-a.seen > re.maxAge || r.PTS < a.seen {
			delete(re.alias, tid)
		}
	}
}

// assign replaces the tracker's ids of r's tracked detections by public ids: a known track
// keeps its id (claimed first, so that no new track takes it on this frame); a new one takes the
// id of the most similar gallery unclaimed, else keeps its own. Each detection's embedding goes
// to its id's gallery.
func (re *reid) assign(r *sink.Result) {
	for pass := range 2 {
		for i := range r.Detections {
			d := &r.Detections[i]
			if d.TrackID == 0 {
				continue
			}
			a := re.alias[d.TrackID]
			if (pass == 0) != (a != nil) {
				continue
			}
			tid := d.TrackID
			if a == nil {
				a = &reidAlias{id: tid}
				if k := re.emb[i]; k >= 0 {
					a.id = re.match(r.Attrs[k].Vector, d.ClassID, r.PTS, tid)
				}
				re.alias[tid] = a
			}
			a.seen = r.PTS
			d.TrackID = a.id
			if g := re.gal[a.id]; g != nil && g.call == re.calls { // taken on this frame
				a.id, d.TrackID = tid, tid
			}
			re.claim(r, i)
		}
	}
}

// claim marks detection i's id seen on this frame and adds its embedding to the id's gallery.
func (re *reid) claim(r *sink.Result, i int) {
	d := &r.Detections[i]
	g := re.gal[d.TrackID]
	if g == nil {
		if len(re.gal) >= reidGalleries {
			return
		}
		g = &gallery{class: d.ClassID}
		re.gal[d.TrackID] = g
	}
	g.seen, g.call = r.PTS, re.calls
	k := re.emb[i]
	if k < 0 {
		return
	}
	emb := r.Attrs[k].Vector
	if len(g.vecs) < re.size {
		g.vecs = append(g.vecs, append([]float32(nil), emb...))
	} else {
		g.vecs[g.next] = append(g.vecs[g.next][:0], emb...)
		g.next = (g.next + 1) % re.size
	}
}

// match returns the id whose gallery is the most similar to emb, at least the threshold, among
// those of the class not seen on this frame and seen within MaxAge; else tid.
func (re *reid) match(emb []float32, class int, pts time.Duration, tid int64) int64 {
	best, bv := tid, re.thr
	for id, g := range re.gal {
		if g.call == re.calls || g.class != class || pts-g.seen > re.maxAge || len(g.vecs) == 0 {
			continue
		}
		if s := re.similarity(g, emb); s >= bv {
			best, bv = id, s
		}
	}
	return best
}

// similarity is the cosine between emb and the mean of g's embeddings.
func (re *reid) similarity(g *gallery, emb []float32) float32 {
	m := re.mean(g)
	if len(m) != len(emb) {
		return 0
	}
	var dot, nn float64
	for i, v := range m {
		dot += float64(v) * float64(emb[i])
		nn += float64(v) * float64(v)
	}
	if nn == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(nn))
}

// mean is the sum of g's embeddings (unnormalised), in re.sum.
func (re *reid) mean(g *gallery) []float32 {
	re.sum = re.sum[:0]
	for _, v := range g.vecs {
		if len(re.sum) == 0 {
			re.sum = append(re.sum, v...)
			continue
		}
		if len(v) != len(re.sum) {
			continue
		}
		for i, x := range v {
			re.sum[i] += x
		}
	}
	return re.sum
}

// events gives r's track.end events their track's mean embedding, L2-normalised, when
// configured.
func (re *reid) events(r *sink.Result) {
	if !re.onEnd {
		return
	}
	for i := range r.Events {
		e := &r.Events[i]
		g := re.gal[e.TrackID]
		if e.Type != event.TrackEnd || g == nil || len(g.vecs) == 0 {
			continue
		}
		m := re.mean(g)
		var nn float64
		for _, v := range m {
			nn += float64(v) * float64(v)
		}
		out := make(event.Embedding, len(m))
		for k, v := range m {
			out[k] = float32(float64(v) / math.Sqrt(nn))
		}
		e.Embedding = &out
	}
}

// objects gives the scene's objects, which carry the tracker's ids, the ids assign chose.
func (re *reid) objects(objs []analytics.Object) {
	for k := range objs {
		if a := re.alias[objs[k].TrackID]; a != nil {
			objs[k].TrackID = a.id
		}
	}
}
