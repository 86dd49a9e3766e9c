package record

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
)

// readElst reads the one edit of an edts box as ISO/IEC 14496-12 §8.6.6 lays it out.
func readElst(t testing.TB, b []byte) (version byte, e edit, rate uint32) {
	t.Helper()
	el := child(b, "edts", "elst")
	if el == nil || len(el) < 16 {
		t.Fatalf("no elst in %x", b)
	}
	version, p := el[8], el[12:]
	if n := binary.BigEndian.Uint32(p); n != 1 {
		t.Fatalf("%d edits, want 1", n)
	}
	p = p[4:]
	switch version {
	case 0:
		if len(el) != 28 {
			t.Fatalf("a version 0 elst of %d bytes", len(el))
		}
		e = edit{dur: uint64(binary.BigEndian.Uint32(p)), mediaTime: uint64(binary.BigEndian.Uint32(p[4:]))}
		p = p[8:]
	case 1:
		if len(el) != 36 {
			t.Fatalf("a version 1 elst of %d bytes", len(el))
		}
		e = edit{dur: binary.BigEndian.Uint64(p), mediaTime: binary.BigEndian.Uint64(p[8:])}
		p = p[16:]
	default:
		t.Fatalf("elst version %d", version)
	}
	return version, e, binary.BigEndian.Uint32(p)
}

// The edit list box: version 0 while both fields fit (media time as a signed 32-bit), else
// version 1; one edit at rate 1.
func TestElstBox(t *testing.T) {
	for _, tc := range []struct {
		e       edit
		version byte
	}{
		{edit{mediaTime: 9000, dur: 90000}, 0},
		{edit{mediaTime: 0, dur: 1}, 0},
		{edit{mediaTime: 0x7fffffff, dur: 0xffffffff}, 0},
		{edit{mediaTime: 0x80000000, dur: 90000}, 1}, // past int32: -1 means an empty edit
		{edit{mediaTime: 45000, dur: 0x100000000}, 1},
		{edit{mediaTime: 1 << 40, dur: 1 << 41}, 1},
	} {
		b := elstBox(tc.e)
		if binary.BigEndian.Uint32(b) != uint32(len(b)) || string(b[4:8]) != "edts" {
			t.Errorf("%+v: not one edts box: %x", tc.e, b)
			continue
		}
		v, e, rate := readElst(t, b)
		if v != tc.version || e != tc.e || rate != 1<<16 {
			t.Errorf("%+v: version %d, %+v, rate %#x; want version %d, the same edit, rate 1.0", tc.e, v, e, rate, tc.version)
		}
	}
}

// testInit is an fMP4 init section as segments have, of a small H.264 stream.
func testInit(t testing.TB) []byte {
	t.Helper()
	var buf seekablebuffer.Buffer
	sps := []byte{0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9, 0x40, 0x50, 0x05, 0xbb, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0x20, 0xf1, 0x83, 0x19, 0x60}
	in := fmp4.Init{Tracks: []*fmp4.InitTrack{{ID: 1, TimeScale: timescale, Codec: &codecs.H264{SPS: sps, PPS: []byte{0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0}}}}}
	if err := in.Marshal(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The progressive head's tables hold any samples and edit: its boxes nest by their sizes, the
// edit list is the one given (none for the zero edit), the decode times add up to the media
// header's duration, the chunk offsets start at the data and step by the chunks' sizes.
func FuzzProgressiveHead(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint64(9000), uint64(90000), uint64(1000))
	f.Add([]byte{}, uint64(0), uint64(0), uint64(0))
	f.Add(bytes.Repeat([]byte{0xff, 0x10, 0x80}, 50), uint64(1<<33), uint64(1<<40), uint64(1<<35))
	init := testInit(f)
	f.Fuzz(func(t *testing.T, raw []byte, mediaTime, dur, dataAt uint64) {
		var samples []sampleMeta
		var chunks []uint32
		for i := 0; i+2 < len(raw); i += 3 {
			samples = append(samples, sampleMeta{size: uint32(raw[i]) * 97, dur: uint32(raw[i+1]) * 360, cto: uint32(raw[i+2]&0x7f) * 3600, sync: raw[i+2]&0x80 != 0})
			if raw[i]%4 == 0 || len(chunks) == 0 {
				chunks = append(chunks, 0)
			}
			chunks[len(chunks)-1]++
		}
		e := edit{mediaTime: mediaTime, dur: dur}
		h, err := progressiveHead(init, samples, chunks, e, dataAt)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(b []byte) int
		walk = func(b []byte) int { // the boxes nest exactly; returns how many
			n := 0
			for len(b) > 0 {
				if len(b) < 8 {
					t.Fatalf("%d bytes left over", len(b))
				}
				size := int(binary.BigEndian.Uint32(b))
				if size < 8 || size > len(b) {
					t.Fatalf("a %q box of %d bytes in %d", b[4:8], size, len(b))
				}
				switch string(b[4:8]) {
				case "moov", "trak", "mdia", "minf", "stbl", "edts":
					walk(b[8:size])
				}
				b, n = b[size:], n+1
			}
			return n
		}
		if walk(h) != 2 {
			t.Fatal("not ftyp and moov")
		}
		trak := child(h, "moov", "trak")
		if ed := child(trak[8:], "edts"); (e == edit{}) != (ed == nil) {
			t.Fatalf("edit %+v: edts %x", e, ed)
		} else if ed != nil {
			if _, got, _ := readElst(t, ed); got != e {
				t.Fatalf("elst %+v, want %+v", got, e)
			}
		}
		stbl := child(trak[8:], "mdia", "minf", "stbl")
		var total uint64
		stts := child(stbl[8:], "stts")
		for p, k := stts[16:], 0; len(p) >= 8; p, k = p[8:], k+1 {
			total += uint64(binary.BigEndian.Uint32(p)) * uint64(binary.BigEndian.Uint32(p[4:]))
		}
		var want uint64
		for _, s := range samples {
			want += uint64(s.dur)
		}
		mdhd := child(trak[8:], "mdia", "mdhd")
		if total != want || uint64(binary.BigEndian.Uint32(mdhd[24:])) != min(want, 0xffffffff) {
			t.Fatalf("stts adds up to %d, mdhd says %d, the samples %d", total, binary.BigEndian.Uint32(mdhd[24:]), want)
		}
		co := child(stbl[8:], "co64")
		if int(binary.BigEndian.Uint32(co[12:])) != len(chunks) {
			t.Fatalf("%d chunk offsets, %d chunks", binary.BigEndian.Uint32(co[12:]), len(chunks))
		}
		at, i := dataAt, 0
		for c, n := range chunks {
			if got := binary.BigEndian.Uint64(co[16+8*c:]); got != at {
				t.Fatalf("chunk %d at %d, want %d", c, got, at)
			}
			for range n {
				at += uint64(samples[i].size)
				i++
			}
		}
		if sz := child(stbl[8:], "stsz"); int(binary.BigEndian.Uint32(sz[16:])) != len(samples) {
			t.Fatalf("stsz counts %d samples, want %d", binary.BigEndian.Uint32(sz[16:]), len(samples))
		}
	})
}
