package ps

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
)

var clips = []string{"videos/car-detection.mp4", "videos/person-bicycle-car_hevc.mp4"}

type captured struct {
	codec          media.Codec
	data           []byte
	pts, dts       int64
	hasPTS, hasDTS bool
}

func capture(out *[]captured) func(f *Frame) {
	return func(f *Frame) {
		*out = append(*out, captured{f.Codec, bytes.Clone(f.Data), f.PTS, f.DTS, f.HasPTS, f.HasDTS})
	}
}

var quirkCases = []struct {
	name   string
	q      Quirks
	maxPES int
	flush  bool // the transport marks frame ends (RTP marker)
	check  func(t *testing.T, s Stats, frames int)
}{
	{name: "conforming, frame ends marked", flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.Frames != uint64(n) || s.VideoPES != uint64(n) || s.Packs != uint64(n) || s.NoStreamMap != 0 || s.JunkBytes != 0 {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "conforming, frames split by PTS", check: func(t *testing.T, s Stats, n int) {
		if s.Frames != uint64(n) || s.EarlyFlush != 0 {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "several PES per frame", maxPES: 1000, flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.VideoPES <= s.Frames || s.PESWithoutPTS != 0 {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "no stream map", q: Quirks{NoStreamMap: true}, flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.NoStreamMap != uint64(n) || s.StreamMaps != 0 || s.SystemHeaders != 0 {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "no PTS", q: Quirks{NoPTS: true}, maxPES: 3000, flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.PESWithoutPTS != uint64(n) {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "stuffing and junk", q: Quirks{PackStuffing: 5, Junk: []byte{0, 0, 0xFF, 0x12, 0, 0, 0}}, flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.PackStuffing != uint64(n) || s.JunkBytes != uint64(7*n) {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "unbounded video PES", q: Quirks{Unbounded: true, Audio: true}, flush: true, check: func(t *testing.T, s Stats, n int) {
		if s.UnboundedPES != uint64(n) || s.AudioPES != uint64(n) {
			t.Fatalf("stats %+v", s)
		}
	}},
	{name: "MPEG-1 syntax with audio", q: Quirks{MPEG1: true, Audio: true}, maxPES: 5000, check: func(t *testing.T, s Stats, n int) {
		if s.MPEG1 < uint64(3*n) || s.AudioPES != uint64(n) {
			t.Fatalf("stats %+v", s)
		}
	}},
}

// TestRoundTrip muxes the clips' access units with Muxer (with and without vendor quirks),
// feeds the stream in random chunks, and expects every frame back byte-exact with its PTS.
func TestRoundTrip(t *testing.T) {
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		for _, tc := range quirkCases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				m := Muxer{Codec: c.Codec, MaxPES: tc.maxPES, Quirks: tc.q}
				var got []captured
				d := Demuxer{OnFrame: capture(&got)}
				rng := rand.New(rand.NewPCG(1, 2))
				var ps []byte
				for i, s := range c.Samples {
					ps = m.Frame(ps[:0], c.AnnexB(i), s.PTS+90000, s.DTS+90000, s.Key)
					for len(ps) > 0 {
						n := min(len(ps), 1+rng.IntN(3000))
						d.Write(ps[:n])
						ps = ps[n:]
					}
					if tc.flush {
						d.Flush()
						if len(got) != i+1 {
							t.Fatalf("frame %d not delivered at its end (%d delivered)", i, len(got))
						}
					}
				}
				d.Flush()
				if len(got) != len(c.Samples) {
					t.Fatalf("%d frames, want %d (stats %+v)", len(got), len(c.Samples), d.Stats())
				}
				for i, f := range got {
					s := c.Samples[i]
					if !bytes.Equal(f.data, c.AnnexB(i)) {
						t.Fatalf("frame %d differs (%d bytes, want %d)", i, len(f.data), len(c.AnnexB(i)))
					}
					if f.codec != c.Codec {
						t.Fatalf("frame %d: codec %v", i, f.codec)
					}
					if tc.q.NoPTS {
						if f.hasPTS {
							t.Fatalf("frame %d has a PTS", i)
						}
						continue
					}
					if !f.hasPTS || f.pts != s.PTS+90000 || f.hasDTS != (s.PTS != s.DTS) || f.hasDTS && f.dts != s.DTS+90000 {
						t.Fatalf("frame %d: PTS %d/%v DTS %d/%v, want %d %d", i, f.pts, f.hasPTS, f.dts, f.hasDTS, s.PTS+90000, s.DTS+90000)
					}
				}
				tc.check(t, d.Stats(), len(c.Samples))
			})
		}
	}
}

// TestResetAndEarlyFlush loses the middle of a frame: the frame is dropped, later ones are not.
func TestResetAndEarlyFlush(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	m := Muxer{Codec: c.Codec}
	var got []captured
	d := Demuxer{OnFrame: capture(&got)}
	ps := m.Frame(nil, c.AnnexB(0), 0, 0, true)
	d.Write(ps[:len(ps)/2])
	d.Flush() // the transport is wrong: the PES is incomplete
	if len(got) != 0 || d.Stats().EarlyFlush != 1 {
		t.Fatalf("early flush delivered %d frames, stats %+v", len(got), d.Stats())
	}
	d.Reset() // the rest of the frame was lost
	for i := 1; i < 4; i++ {
		d.Write(m.Frame(nil, c.AnnexB(i), int64(i)*7200, int64(i)*7200, false))
		d.Flush()
	}
	if len(got) != 3 || d.Stats().Truncated != 1 {
		t.Fatalf("delivered %d frames, stats %+v", len(got), d.Stats())
	}
	for i, f := range got {
		if !bytes.Equal(f.data, c.AnnexB(i+1)) {
			t.Fatalf("frame %d differs", i+1)
		}
	}
}

// TestCut: a frame whose tail was lost is delivered cut at the gap, with its timestamps; the
// rest of it (arriving after the gap) is junk up to the next pack, and the next frames are
// whole. Cut points fall in the pack header, the stream map, the PES header and the payload.
func TestCut(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	m := Muxer{Codec: c.Codec}
	key := m.Frame(nil, c.AnnexB(0), 9000, 9000, true)
	es := c.AnnexB(0)
	hdr := len(key) - len(es) // everything before the payload (a single PES: the frame fits)
	for _, at := range []int{10, 40, hdr - 3, hdr + 1, hdr + 1000, len(key) - 1} {
		var got []captured
		d := Demuxer{OnFrame: capture(&got)}
		d.Write(key[:at])
		d.Cut()
		d.Write(key[at+min(1400, len(key)-at-1):]) // what arrives after the gap
		next := m.Frame(nil, c.AnnexB(1), 12600, 12600, false)
		d.Write(next)
		d.Flush()
		want := max(at-hdr, 0)
		switch {
		case want == 0 && (len(got) != 1 || !bytes.Equal(got[0].data, c.AnnexB(1))):
			t.Fatalf("cut at %d (before the payload): %d frames", at, len(got))
		case want > 0 && (len(got) != 2 || !bytes.Equal(got[0].data, es[:want]) || got[0].pts != 9000 || !bytes.Equal(got[1].data, c.AnnexB(1))):
			t.Fatalf("cut at %d: %d frames (first %d bytes, want %d)", at, len(got), len(got[0].data), want)
		}
		if want > 0 && d.Stats().Cut != 1 {
			t.Fatalf("cut at %d: stats %+v", at, d.Stats())
		}
	}
}

// TestStreamMap checks codec selection: the map names the codec, an unsupported video stream
// is skipped, and a map that contradicts the NAL units loses.
func TestStreamMap(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[1]) // H.265
	for _, tc := range []struct {
		name       string
		mapCodec   media.Codec
		streamType byte
		want       media.Codec
		mismatch   uint64
		frames     int
	}{
		{"right", media.CodecH265, 0, media.CodecH265, 0, 3},
		{"wrong", media.CodecH264, 0, media.CodecH265, 1, 3},
		{"SVAC", 0, StreamTypeSVAC, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Muxer{Codec: tc.mapCodec}
			var got []captured
			d := Demuxer{OnFrame: capture(&got)}
			for i := range 3 {
				ps := m.Frame(nil, c.AnnexB(i), int64(i)*7500, int64(i)*7500, true)
				if tc.streamType != 0 { // patch the stream type in the map
					j := bytes.Index(ps, []byte{0, 0, 1, idStreamMap})
					ps[j+12] = tc.streamType
				}
				d.Write(ps)
				d.Flush()
			}
			s := d.Stats()
			if len(got) != tc.frames || s.StreamMapMismatch != tc.mismatch {
				t.Fatalf("%d frames, stats %+v", len(got), s)
			}
			for _, f := range got {
				if f.codec != tc.want {
					t.Fatalf("codec %v, want %v", f.codec, tc.want)
				}
			}
			if tc.streamType == StreamTypeSVAC && s.UnsupportedVideo != 3 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestPSMCRC(t *testing.T) {
	// ISO/IEC 13818-1 Annex A CRC of "123456789" is 0x0376E6E7 (CRC-32/MPEG-2 check value).
	if got := crc32MPEG([]byte("123456789")); got != 0x0376E6E7 {
		t.Fatalf("crc %#08x", got)
	}
	m := Muxer{Codec: media.CodecH264}
	psm := m.streamMap(nil)
	if crc32MPEG(psm) != 0 { // a CRC over data and its CRC leaves 0
		t.Fatalf("stream map CRC does not check: %x", psm)
	}
}

func TestTimestampCoding(t *testing.T) {
	for _, ts := range []int64{0, 1, 90000, 1<<33 - 1, 0x123456789 & (1<<33 - 1)} {
		var b [5]byte
		putTimestamp(b[:], 2, ts)
		if got := readTimestamp(b[:]); got != ts || b[0]>>4 != 2 || b[0]&1 != 1 || b[2]&1 != 1 || b[4]&1 != 1 {
			t.Fatalf("ts %d: %x -> %d", ts, b, got)
		}
	}
}

func BenchmarkDemux(b *testing.B) {
	c := sourcetest.LoadClip(b, clips[0])
	m := Muxer{Codec: c.Codec}
	var ps []byte
	var marks []int
	for i, s := range c.Samples[:120] {
		ps = m.Frame(ps, c.AnnexB(i), s.PTS, s.DTS, s.Key)
		marks = append(marks, len(ps))
	}
	frames := 0
	d := Demuxer{OnFrame: func(*Frame) { frames++ }}
	b.SetBytes(int64(len(ps)))
	b.ReportAllocs()
	for b.Loop() {
		prev := 0
		for _, end := range marks {
			for p := prev; p < end; p += 1400 { // RTP-sized chunks
				d.Write(ps[p:min(p+1400, end)])
			}
			d.Flush()
			prev = end
		}
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}
