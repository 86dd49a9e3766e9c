package pipeline

import (
	"time"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
)

// Bounds of a stream's attribute votes.
const (
	voteTracks = 4096             // tracks with votes
	voteTexts  = 16               // distinct reads kept per track and attribute
	voteForget = 60 * time.Second // stream time after which a track unseen loses its votes
)

// votes tallies, per track, the attribute reads of cascades with as: (ocr texts, classify
// labels), each weighted by its confidence; the winner is the read with the most weight. It
// runs on the output goroutine, after the tracker has set the track ids.
type votes struct {
	tracks map[int64]*trackVotes
	calls  int
}

type trackVotes struct {
	seen  time.Duration // stream time of the track's latest frame
	names []nameVotes
}

type nameVotes struct {
	name  string
	reads int
	total float32
	texts []textVote
}

type textVote struct {
	text   string
	weight float32
}

// process tallies r's reads by the track of their detection and sets r.Voted for each tracked
// detection with votes, then gives r's events the attributes of their tracks.
func (v *votes) process(r *sink.Result) {
	v.calls++
	if v.calls%256 == 0 {
		for id, t := range v.tracks {
			if r.PTS-t.seen > voteForget || r.PTS < t.seen {
				delete(v.tracks, id)
			}
		}
	}
	for k, a := range r.Attrs {
		if a.As == "" || (a.Kind != attr.KindOCR && a.Kind != attr.KindClassify) {
			continue
		}
		p := r.AttrParent[k]
		if p < 0 || p >= len(r.Detections) || r.Detections[p].TrackID == 0 {
			continue
		}
		text := a.Text
		if a.Kind == attr.KindClassify {
			text = a.Label
		}
		if text == "" {
			continue
		}
		v.add(r.Detections[p].TrackID, a.As, text, a.Score, r.PTS)
	}
	if len(v.tracks) == 0 {
		return
	}
	for i := range r.Detections {
		t := v.tracks[r.Detections[i].TrackID]
		if t == nil {
			continue
		}
		t.seen = r.PTS
		for _, n := range t.names {
			w := n.winner()
			r.Voted = append(r.Voted, sink.Voted{Parent: i, Name: n.name, Text: w.text, Score: w.weight / n.total, Reads: n.reads})
		}
	}
	for i := range r.Events {
		e := &r.Events[i]
		if t := v.tracks[e.TrackID]; t != nil && e.Attributes == nil {
			as := make(event.Attributes, 0, len(t.names))
			for _, n := range t.names {
				w := n.winner()
				as = append(as, event.Attribute{Name: n.name, Text: w.text, Score: w.weight / n.total, Reads: n.reads})
			}
			e.Attributes = &as
		}
	}
}

func (v *votes) add(track int64, name, text string, score float32, pts time.Duration) {
	if v.tracks == nil {
		v.tracks = map[int64]*trackVotes{}
	}
	t := v.tracks[track]
	if t == nil {
		if len(v.tracks) >= voteTracks {
			return
		}
		t = &trackVotes{}
		v.tracks[track] = t
	}
	t.seen = pts
	var n *nameVotes
	for i := range t.names {
		if t.names[i].name == name {
			n = &t.names[i]
		}
	}
	if n == nil {
		t.names = append(t.names, nameVotes{name: name})
		n = &t.names[len(t.names)-1]
	}
	w := max(score, 1e-3)
	n.reads++
	n.total += w
	for i := range n.texts {
		if n.texts[i].text == text {
			n.texts[i].weight += w
			return
		}
	}
	if len(n.texts) < voteTexts {
		n.texts = append(n.texts, textVote{text: text, weight: w})
	}
}

func (n *nameVotes) winner() textVote {
	var best textVote
	for _, t := range n.texts {
		if t.weight > best.weight {
			best = t
		}
	}
	return best
}
