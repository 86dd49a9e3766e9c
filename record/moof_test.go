package record

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
)

// testFragment marshals samples (their payloads filled with their index) as a segment's
// fragment does and returns it with its moof's length.
func testFragment(t testing.TB, base uint64, samples []*fmp4.Sample) ([]byte, int) {
	t.Helper()
	var buf seekablebuffer.Buffer
	p := fmp4.Part{SequenceNumber: 1, Tracks: []*fmp4.PartTrack{{ID: 1, BaseTime: base, Samples: samples}}}
	if err := p.Marshal(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return b, int(binary.BigEndian.Uint32(b))
}

// parseMoof reads what the segments' writer writes: each sample's duration, size, composition
// offset (B-frames: negative ones too), sync flag and where its data lies; a fragment without
// composition offsets or with only sync samples (the writer leaves those fields out) too.
func TestParseMoof(t *testing.T) {
	for _, tc := range []struct {
		name    string
		base    uint64
		samples []*fmp4.Sample
	}{
		{"B-frames", 900000, []*fmp4.Sample{
			{Duration: 3600, PTSOffset: 7200, Payload: make([]byte, 50)},
			{Duration: 3600, PTSOffset: 10800, IsNonSyncSample: true, Payload: make([]byte, 7)},
			{Duration: 3600, PTSOffset: 0, IsNonSyncSample: true, Payload: make([]byte, 3)},
			{Duration: 3000, PTSOffset: -3600, IsNonSyncSample: true, Payload: make([]byte, 1)},
		}},
		{"no B-frames", 1 << 40, []*fmp4.Sample{
			{Duration: 7200, Payload: make([]byte, 100)},
			{Duration: 7200, IsNonSyncSample: true, Payload: make([]byte, 20)},
		}},
		{"all sync", 0, []*fmp4.Sample{{Duration: 1, Payload: []byte{9}}, {Duration: 2, Payload: []byte{8, 7}}}},
	} {
		for i, s := range tc.samples {
			for j := range s.Payload {
				s.Payload[j] = byte(i + 1)
			}
		}
		frag, moofLen := testFragment(t, tc.base, tc.samples)
		const off = 1000 // the fragment's offset in its file
		base, got, err := parseMoof(frag[:moofLen], off)
		if err != nil || base != tc.base || len(got) != len(tc.samples) {
			t.Errorf("%s: base %d, %d samples, %v; want %d, %d", tc.name, base, len(got), err, tc.base, len(tc.samples))
			continue
		}
		for i, s := range tc.samples {
			g := got[i]
			data := frag[g.at-off : g.at-off+int64(g.size)]
			if g.dur != s.Duration || g.cto != s.PTSOffset || g.sync == s.IsNonSyncSample || !bytes.Equal(data, s.Payload) {
				t.Errorf("%s: sample %d: %+v (data %x), want %+v", tc.name, i, g, data, s)
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("xxxxmoof"), {0, 0, 0, 8, 'm', 'o', 'o', 'f'}} {
		if _, _, err := parseMoof(bad, 0); err != errMoof {
			t.Errorf("parseMoof(%q): %v, want errMoof", bad, err)
		}
	}
}

// Any bytes: an error or samples whose count is bounded, never a panic.
func FuzzParseMoof(f *testing.F) {
	frag, n := testFragment(f, 90000, []*fmp4.Sample{
		{Duration: 3600, PTSOffset: 3600, Payload: []byte{1, 2}},
		{Duration: 3600, IsNonSyncSample: true, Payload: []byte{3}},
	})
	f.Add(frag[:n])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, samples, err := parseMoof(b, 0)
		if err == nil && (len(samples) == 0 || len(samples) > maxMoofSamples) {
			t.Fatalf("%d samples without an error", len(samples))
		}
	})
}
