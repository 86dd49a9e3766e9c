package rtp

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seed corpora under testdata/fuzz")

// Parameter sets of the shared clips (car-detection.mp4, person-bicycle-car_hevc.mp4).
var (
	seedSPS264 = []byte{0x67, 0x42, 0xc0, 0x16, 0xda, 0x03, 0x00, 0xdf, 0x6b, 0x81, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2e, 0xa0}
	seedPPS264 = []byte{0x68, 0xce, 0x3c, 0x80}
	seedVPS265 = []byte{0x40, 0x01, 0x0c, 0x01, 0xff, 0xff, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x5a, 0x95, 0x98, 0x09}
	seedSPS265 = []byte{0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x5a, 0xa0, 0x06, 0x02, 0x01, 0xb1, 0x65, 0x95, 0x9a, 0x49, 0x32, 0xb9, 0xa8, 0x30, 0x30, 0x37, 0x08, 0x00, 0x00, 0x03, 0x00, 0x08, 0x00, 0x00, 0x03, 0x00, 0x60, 0x40}
	seedPPS265 = []byte{0x44, 0x01, 0xc1, 0x72, 0xb4, 0x62, 0x40}
)

func slice(hdr []byte, n int) []byte {
	b := append([]byte{}, hdr...)
	for i := range n {
		b = append(b, byte(i*7+3)|0x10) // no zero bytes: no start-code emulation
	}
	return b
}

// depacketizeSeeds returns inputs of FuzzDepacketize: a selector byte (bit 0: H.265, bits 1-4:
// reorder window - 1, bit 5: out-of-band parameter sets, bit 6: refuse every third access unit)
// and RFC 4571 frames, each an RTP packet or, when shorter than 12 bytes, a 30 ms clock tick.
func depacketizeSeeds(t testing.TB) map[string][]byte {
	t.Helper()
	aus := map[media.Codec][][][]byte{
		media.CodecH264: {
			{{0x09, 0xf0}, seedSPS264, seedPPS264, {0x06, 0x05, 0x01, 0x11}, slice([]byte{0x65, 0x88}, 700)},
			{slice([]byte{0x41, 0x9a}, 90)},
			{slice([]byte{0x41, 0x9a}, 40), slice([]byte{0x41, 0x9b}, 30)},
			{slice([]byte{0x65, 0x88}, 300)},
		},
		media.CodecH265: {
			{seedVPS265, seedSPS265, seedPPS265, slice([]byte{0x26, 0x01}, 700)},
			{slice([]byte{0x02, 0x01}, 90)},
			{slice([]byte{0x02, 0x01}, 40), slice([]byte{0x00, 0x01}, 30)},
			{slice([]byte{0x2a, 0x01}, 300)},
		},
	}
	seeds := map[string][]byte{}
	for codec, list := range aus {
		var pkts []*pionrtp.Packet
		ssrc, seq := uint32(0x11223344), uint16(65530)
		for i, au := range list {
			var ps []*pionrtp.Packet
			var err error
			if codec == media.CodecH264 {
				e := rtph264.Encoder{PayloadType: 96, SSRC: &ssrc, InitialSequenceNumber: &seq, PayloadMaxSize: 200, PacketizationMode: 1}
				if err = e.Init(); err == nil {
					ps, err = e.Encode(au)
				}
			} else {
				e := rtph265.Encoder{PayloadType: 96, SSRC: &ssrc, InitialSequenceNumber: &seq, PayloadMaxSize: 200}
				if err = e.Init(); err == nil {
					ps, err = e.Encode(au)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				p.Timestamp = 0xFFFFF000 + uint32(i)*3600
			}
			seq += uint16(len(ps))
			pkts = append(pkts, ps...)
		}
		sel := byte(7 << 1) // window 8
		if codec == media.CodecH265 {
			sel |= 1
		}
		frames := func(order []int, ticks map[int]bool) []byte {
			b := []byte{sel}
			for _, i := range order {
				if ticks[i] {
					b, _ = AppendFrame(b, []byte{0})
				}
				raw, err := pkts[i].Marshal()
				if err != nil {
					t.Fatal(err)
				}
				b, _ = AppendFrame(b, raw)
			}
			return b
		}
		all := make([]int, len(pkts))
		for i := range all {
			all[i] = i
		}
		seeds[codec.String()+"-in-order"] = frames(all, nil)
		swapped := append([]int{}, all...)
		swapped[2], swapped[3] = swapped[3], swapped[2]
		seeds[codec.String()+"-reordered"] = frames(swapped, nil)
		lossy := append(append([]int{}, all[:4]...), all[5:]...)
		seeds[codec.String()+"-loss"] = frames(lossy, map[int]bool{6: true, 7: true})
		sdp := frames(all[len(all)-3:], nil)
		sdp[0] |= 0x20
		seeds[codec.String()+"-sdp-params"] = sdp
	}
	return seeds
}

func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz")
	}
	write := func(fuzz string, seeds map[string][]byte) {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzDepacketize", depacketizeSeeds(t))
	framing := map[string][]byte{}
	for i, tc := range framingCases {
		framing[fmt.Sprintf("case-%d", i)] = tc.in
	}
	write("FuzzFraming", framing)
}

// FuzzDepacketize drives the receive path of the RTP sources (Reorderer, then Depacketizer) with
// arbitrary packets: it must never panic, and what it delivers must be well-formed.
func FuzzDepacketize(f *testing.F) {
	for _, b := range depacketizeSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		runDepacketize(t, in)
	})
}

// runDepacketize returns the number of access units delivered.
func runDepacketize(t *testing.T, in []byte) int {
	if len(in) == 0 {
		return 0
	}
	sel := in[0]
	codec := media.CodecH264
	if sel&1 != 0 {
		codec = media.CodecH265
	}
	n := 0
	d := Depacketizer{Codec: codec, OnAccessUnit: func(au *media.AccessUnit) bool {
		n++
		if len(au.Data) < 5 || !bytes.HasPrefix(au.Data, []byte{0, 0, 0, 1}) {
			t.Fatalf("access unit %x is not Annex-B", au.Data)
		}
		if au.Discontinuity && !au.Key {
			t.Fatal("discontinuity on a non-key access unit")
		}
		key := false
		for b := au.Data; len(b) > 0; {
			var nalu []byte
			nalu, b = h26x.NextNALU(b)
			key = key || h26x.Classify(codec, nalu) == h26x.KindKey
		}
		if key != au.Key {
			t.Fatalf("Key %v for %x", au.Key, au.Data)
		}
		return sel&0x40 == 0 || n%3 != 0
	}}
	if sel&0x20 != 0 {
		if codec == media.CodecH264 {
			d.ParamSets = [][]byte{seedSPS264, seedPPS264}
		} else {
			d.ParamSets = [][]byte{seedVPS265, seedSPS265, seedPPS265}
		}
	}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	r := Reorderer[[]byte]{Window: 1 + int(sel>>1&15), MaxDelay: 20 * time.Millisecond}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	var pkt pionrtp.Packet
	pop := func() {
		for {
			b, lost, ok := r.Pop(now)
			if !ok {
				return
			}
			if lost > 0 {
				d.Loss()
			}
			if pkt.Unmarshal(b) == nil {
				d.Push(&pkt, now)
			}
		}
	}
	fr := NewFrameReader(bytes.NewReader(in[1:]))
	for {
		b, err := fr.Next()
		if err != nil {
			break
		}
		now = now.Add(time.Millisecond)
		if len(b) < 12 {
			now = now.Add(30 * time.Millisecond)
		} else if pkt.Unmarshal(b) == nil {
			r.Push(pkt.SequenceNumber, bytes.Clone(b), now)
		}
		pop()
	}
	now = now.Add(time.Second)
	pop()
	return n
}

func TestFuzzSeedsDeliver(t *testing.T) {
	for name, b := range depacketizeSeeds(t) {
		t.Run(name, func(t *testing.T) {
			want := map[bool]int{true: 4, false: 1}[strings.HasSuffix(name, "order")]
			if n := runDepacketize(t, b); n < want {
				t.Fatalf("%d access units delivered, want %d or more", n, want)
			}
		})
	}
}
