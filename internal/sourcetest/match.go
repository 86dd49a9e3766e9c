package sourcetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/media"
)

// Matcher checks the access units a source delivers against a clip: each must be
// byte-identical to Clip.AnnexB of a sample at or after the last one matched (from the start
// again after a discontinuity, when a sender may have restarted the clip), with the sample's
// key flag, and PTS must advance as the clip's PTS do between discontinuities.
type Matcher struct {
	Clip *Clip
	// PTSTolerance allows for rounding in senders that rescale timestamps; 0 means 100 µs.
	PTSTolerance time.Duration
	// ContinuousPTS expects PTS to follow the clip across discontinuities too (packet loss,
	// where the sender's clock goes on, unlike a reconnection).
	ContinuousPTS bool

	annexb   [][]byte
	next     int
	segment  bool
	basePTS  time.Duration
	baseTick int64

	// Matched counts access units matched; Keys the key frames among them; Discontinuities
	// those flagged; Skipped counts samples passed over (not delivered).
	Matched, Keys, Discontinuities, Skipped int
	// Last is the index of the sample matched last.
	Last int
}

// Check matches au, failing the test when it is not byte-exact to a clip sample. Call it from
// the test's goroutine; elsewhere use Match.
func (m *Matcher) Check(t testing.TB, au *media.AccessUnit) {
	t.Helper()
	if err := m.Match(au); err != nil {
		t.Fatal(err)
	}
}

// Match matches au, returning an error when it is not byte-exact to a clip sample.
func (m *Matcher) Match(au *media.AccessUnit) error {
	if m.annexb == nil {
		for i := range m.Clip.Samples {
			m.annexb = append(m.annexb, m.Clip.AnnexB(i))
		}
	}
	if au.Codec != m.Clip.Codec {
		return fmt.Errorf("access unit %d: codec %v, want %v", m.Matched, au.Codec, m.Clip.Codec)
	}
	from := m.next
	if au.Discontinuity {
		if !m.ContinuousPTS {
			from = 0
			m.segment = false
		}
		m.Discontinuities++
	}
	found := -1
	for i := from; i < len(m.annexb); i++ {
		if bytes.Equal(m.annexb[i], au.Data) {
			found = i
			break
		}
	}
	if found < 0 {
		return fmt.Errorf("access unit %d (%d bytes, key %v, PTS %v) matches no sample from %d on; the last matched was %d",
			m.Matched, len(au.Data), au.Key, au.PTS, from, m.Last)
	}
	s := m.Clip.Samples[found]
	if au.Key != s.Key {
		return fmt.Errorf("access unit %d = sample %d: key %v, want %v", m.Matched, found, au.Key, s.Key)
	}
	if au.Discontinuity && !au.Key {
		return fmt.Errorf("access unit %d = sample %d: discontinuity on a non-key frame", m.Matched, found)
	}
	tol := m.PTSTolerance
	if tol == 0 {
		tol = 100 * time.Microsecond
	}
	if !m.segment {
		m.segment, m.basePTS, m.baseTick = true, au.PTS, s.PTS
	} else {
		want := m.basePTS + time.Duration(s.PTS-m.baseTick)*time.Second/90000
		if d := au.PTS - want; d > tol || d < -tol {
			return fmt.Errorf("access unit %d = sample %d: PTS %v, want %v", m.Matched, found, au.PTS, want)
		}
	}
	if au.DTS > au.PTS {
		return fmt.Errorf("access unit %d = sample %d: DTS %v after PTS %v", m.Matched, found, au.DTS, au.PTS)
	}
	if found > m.next {
		m.Skipped += found - m.next
	}
	m.next, m.Last = found+1, found
	m.Matched++
	if au.Key {
		m.Keys++
	}
	return nil
}

// Reader is what ReadUntil reads from (a source.Source).
type Reader interface {
	Read(ctx context.Context) (*media.AccessUnit, error)
}

// ReadUntil reads access units from r and matches each with m until done reports true (done
// sees the access unit just matched). It returns the first read or match error, or an error
// when timeout passes first.
func ReadUntil(r Reader, m *Matcher, done func(*media.AccessUnit) bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		au, err := r.Read(ctx)
		if err != nil {
			return fmt.Errorf("read after %d access units: %w", m.Matched, err)
		}
		if err := m.Match(au); err != nil {
			return err
		}
		if done(au) {
			return nil
		}
	}
}

// All is a ReadUntil condition: every sample of the clip was matched.
func (m *Matcher) All(*media.AccessUnit) bool { return m.Matched == len(m.Clip.Samples) }
