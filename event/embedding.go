package event

import "github.com/vinfer/vinfer/internal/jsonenc"

// Embedding is a track's appearance vector (L2-normalised), on its track.end event when the
// tracker's re-identification is told to (tracker.reid.embedding_on_end), for matching
// identities across cameras: "embedding":[0.0123,…] (4 decimals).
type Embedding []float32

func (e *Event) appendEmbedding(b []byte) []byte {
	if e.Embedding == nil || len(*e.Embedding) == 0 {
		return b
	}
	b = append(b, `,"embedding":[`...)
	for i, v := range *e.Embedding {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.Float32(b, v, 4)
	}
	return append(b, ']')
}
