package activity

import (
	"time"

	"github.com/vinfer/vinfer/media"
)

// maxHeld bounds the access units a GOP buffer holds, whatever their size.
const maxHeld = 4096

// gop holds copies of a stream's access units from its last key frame on, within a byte bound:
// what a wake decodes in a burst. Its storage grows to the bound once and is reused.
type gop struct {
	limit int
	data  []byte
	units []heldUnit
	out   []media.AccessUnit
	cut   int // access units refused for the bound since the key frame
}

type heldUnit struct {
	off, n   int
	pts, dts time.Duration
	key      bool
	discard  bool
	codec    media.Codec
	wall     time.Time
}

// reset empties the buffer; it returns how many units it held and refused.
func (g *gop) reset() (held, cut int) {
	held, cut = len(g.units), g.cut
	g.data, g.units, g.cut = g.data[:0], g.units[:0], 0
	return
}

// add copies au in; false when the bound refuses it (counted in cut).
func (g *gop) add(au *media.AccessUnit) bool {
	if len(g.data)+len(au.Data) > g.limit || len(g.units) >= maxHeld || g.cut > 0 {
		g.cut++
		return false
	}
	off := len(g.data)
	g.data = append(g.data, au.Data...)
	g.units = append(g.units, heldUnit{off: off, n: len(au.Data), pts: au.PTS, dts: au.DTS, key: au.Key,
		discard: au.Discard, codec: au.Codec, wall: au.Wallclock})
	return true
}

// view returns the held units as access units borrowing the buffer, valid until its next
// change.
func (g *gop) view() []media.AccessUnit {
	g.out = g.out[:0]
	for _, u := range g.units {
		g.out = append(g.out, media.AccessUnit{Codec: u.codec, Data: g.data[u.off : u.off+u.n : u.off+u.n],
			PTS: u.pts, DTS: u.dts, Key: u.key, Discard: u.discard, Wallclock: u.wall})
	}
	return g.out
}

func (g *gop) bytes() int { return len(g.data) }
