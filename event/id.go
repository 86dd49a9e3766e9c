package event

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrID is returned for text that is not a 26-character Crockford base32 ULID.
var ErrID = errors.New("invalid event id")

// crockford is Crockford's base32 alphabet (no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// IDLen is the length of an ID's text.
const IDLen = 26

// ID is a ULID: bytes 0–5 are the big-endian Unix time in milliseconds, bytes 6–15 random.
// The zero ID means none.
type ID [16]byte

// maxMillis is the largest time a ULID holds (48 bits).
const maxMillis = 1<<48 - 1

// Time returns the millisecond timestamp held by id.
func (id ID) Time() time.Time {
	var ms int64
	for _, c := range id[:6] {
		ms = ms<<8 | int64(c)
	}
	return time.UnixMilli(ms)
}

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// Append appends id's 26-character text to b, without allocating once b has room.
func (id ID) Append(b []byte) []byte {
	hi := uint64(id[0])<<56 | uint64(id[1])<<48 | uint64(id[2])<<40 | uint64(id[3])<<32 |
		uint64(id[4])<<24 | uint64(id[5])<<16 | uint64(id[6])<<8 | uint64(id[7])
	lo := uint64(id[8])<<56 | uint64(id[9])<<48 | uint64(id[10])<<40 | uint64(id[11])<<32 |
		uint64(id[12])<<24 | uint64(id[13])<<16 | uint64(id[14])<<8 | uint64(id[15])
	var s [IDLen]byte
	for i := IDLen - 1; i >= 0; i-- {
		s[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return append(b, s[:]...)
}

// String returns id's text.
func (id ID) String() string { return string(id.Append(make([]byte, 0, IDLen))) }

// MarshalText returns id's text.
func (id ID) MarshalText() ([]byte, error) { return id.Append(make([]byte, 0, IDLen)), nil }

// UnmarshalText parses id's text (ParseID).
func (id *ID) UnmarshalText(b []byte) error {
	v, err := parseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseID parses a 26-character ULID, upper or lower case. Its first character is at most 7
// (the text holds 130 bits); errors wrap ErrID.
func ParseID(s string) (ID, error) { return parseID([]byte(s)) }

func parseID(s []byte) (ID, error) {
	if len(s) != IDLen {
		return ID{}, fmt.Errorf("%w: %d characters, want 26", ErrID, len(s))
	}
	var hi, lo uint64
	for i, c := range s {
		v := decodeChar(c)
		if v < 0 || (i == 0 && v > 7) {
			return ID{}, fmt.Errorf("%w: character %q at %d", ErrID, c, i)
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	var id ID
	for i := range 8 {
		id[i] = byte(hi >> (56 - 8*i))
		id[8+i] = byte(lo >> (56 - 8*i))
	}
	return id, nil
}

func decodeChar(c byte) int {
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	for i := range len(crockford) {
		if crockford[i] == c {
			return i
		}
	}
	return -1
}

// Generator makes IDs that strictly increase: an ID whose millisecond is not after the last
// one's keeps that millisecond and adds 1 to its random part (so a clock that steps back
// cannot reorder IDs). It is safe for concurrent use and does not allocate.
type Generator struct {
	mu     sync.Mutex
	rng    *rand.ChaCha8
	ms     uint64
	hi     uint16 // random bits 79…64
	lo     uint64 // random bits 63…0
	primed bool
	tag    uint16 // SetNode's tag in bits 79…64 (hi), 0 for none
}

// NewGenerator returns a Generator drawing its random bits from ChaCha8 with seed; equal seeds
// and times give equal IDs.
func NewGenerator(seed [32]byte) *Generator {
	return &Generator{rng: rand.NewChaCha8(seed)}
}

var defaultGenerator = func() *Generator {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return NewGenerator(seed)
}()

// NewID returns an ID for time t from the process-wide Generator (randomly seeded).
func NewID(t time.Time) ID { return defaultGenerator.New(t) }

// New returns the next ID for time t (truncated to the millisecond, clamped to 0…2⁴⁸−1 ms).
func (g *Generator) New(t time.Time) ID {
	ms := uint64(max(t.UnixMilli(), 0))
	ms = min(ms, maxMillis)
	g.mu.Lock()
	if g.primed && ms <= g.ms {
		g.lo++
		if g.lo == 0 && g.tag == 0 {
			g.hi++
		}
		if g.lo == 0 && (g.hi == 0 || g.tag != 0) { // overflow (of lo under a tag): the next millisecond
			g.ms = min(g.ms+1, maxMillis)
			g.draw()
		}
	} else {
		g.ms = ms
		g.draw()
		g.primed = true
	}
	var id ID
	for i := range 6 {
		id[i] = byte(g.ms >> (40 - 8*i))
	}
	id[6], id[7] = byte(g.hi>>8), byte(g.hi)
	for i := range 8 {
		id[8+i] = byte(g.lo >> (56 - 8*i))
	}
	g.mu.Unlock()
	return id
}

// draw takes fresh random bits, with the top one clear so that increments rarely overflow.
func (g *Generator) draw() {
	g.hi = uint16(g.rng.Uint64()) & 0x7fff
	g.lo = g.rng.Uint64()
	if g.tag != 0 { // the node's tag in hi; lo's top bit clear instead
		g.hi, g.lo = g.tag, g.lo>>1
	}
}
