package cascade

import (
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// Span is a stretch of a stream's recorded video (record/ segments), [Start, End).
type Span struct {
	Start, End time.Time
}

// Limits of a RecordInfo response (GB/T 28181-2016 §A.2.6.7).
const (
	// maxRecordItems bounds the spans one response lists (the oldest in the range first).
	maxRecordItems = 256
	// recordPart is the most items per response MESSAGE; over UDP a part's body also stays
	// within recordBodyUDP bytes (one item at least), so that the MESSAGE fits the 1300 bytes
	// sipgo sends in one datagram.
	recordPart    = 20
	recordBodyUDP = 700
	// spanGap: recordings closer than this make one span (segments follow one another).
	spanGap = 2 * time.Second
)

// spans merges recordings (oldest first) closer than spanGap, clipped to [from, to], at most
// maxRecordItems.
func spans(recs []Span, from, to time.Time) []manscdp.RecordItem {
	var out []manscdp.RecordItem
	for _, r := range recs {
		if r.Start.Before(from) {
			r.Start = from
		}
		if r.End.After(to) {
			r.End = to
		}
		if !r.End.After(r.Start) {
			continue
		}
		if n := len(out); n > 0 && r.Start.Sub(out[n-1].End) < spanGap {
			if r.End.After(out[n-1].End) {
				out[n-1].End = r.End
			}
			continue
		}
		if len(out) == maxRecordItems {
			break
		}
		out = append(out, manscdp.RecordItem{Start: r.Start, End: r.End})
	}
	return out
}

// recordInfo is the RecordInfo response to query m of channel ch, in parts: the recorded
// spans of ch's stream in the query's range (Type time; none for alarm or manual). Errors:
// manscdp.ErrRecordRange.
func (u *Upstream) recordInfo(m *manscdp.Message, ch config.GB28181UpChannel) ([][]byte, error) {
	from, to, err := manscdp.RecordRange(m)
	if err != nil {
		return nil, err
	}
	var items []manscdp.RecordItem
	if t := m.Type; (t == "" || t == "all" || t == manscdp.RecordTypeTime) && u.c.Recordings != nil {
		items = spans(u.c.Recordings(ch.Stream, from, to), from, to)
	}
	if len(items) == 0 {
		return [][]byte{manscdp.RecordInfoResponse(m.SN, ch.ID, ch.Name, 0, nil)}, nil
	}
	var out [][]byte
	for i := 0; i < len(items); {
		part := manscdp.RecordInfoResponse(m.SN, ch.ID, ch.Name, len(items), items[i:i+1])
		n := 1
		for i+n < len(items) && n < recordPart {
			more := manscdp.RecordInfoResponse(m.SN, ch.ID, ch.Name, len(items), items[i:i+n+1])
			if u.transport != "TCP" && len(more) > recordBodyUDP {
				break
			}
			part, n = more, n+1
		}
		out = append(out, part)
		i += n
	}
	return out, nil
}
