package liveview

import (
	"bytes"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"

	"github.com/vinfer/vinfer/media"
)

// TestMuxer: the first key frame gives the init info, an init segment with its parameter sets,
// then each unit a fragment whose decode time and composition offset give back its PTS; units
// before the first key frame give nothing.
func TestMuxer(t *testing.T) {
	// The parameter sets of assets/videos/one-by-one-person-detection.mp4 (Main, level 3.1).
	sps := []byte{0x67, 0x4d, 0x40, 0x1f, 0x96, 0x52, 0x81, 0x80, 0x6f, 0x4d, 0x41, 0x81, 0x81, 0x90,
		0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x01, 0x48, 0x40}
	pps := []byte{0x68, 0xe9, 0x09, 0x35, 0x20}
	idr := []byte{0x65, 0x88, 0x84}
	b := []byte{0x01, 0x9e, 0x02}
	annexb := func(ns ...[]byte) []byte {
		var out []byte
		for _, n := range ns {
			out = append(append(out, 0, 0, 0, 1), n...)
		}
		return out
	}
	var msgs [][]byte
	var texts []string
	send := func(text bool, m []byte) error {
		if text {
			texts = append(texts, string(m))
		} else {
			msgs = append(msgs, m)
		}
		return nil
	}
	var m muxer
	ms := time.Millisecond
	units := []Unit{
		{Codec: media.CodecH264, Data: annexb(b), PTS: 0, DTS: 0}, // before the key frame
		{Codec: media.CodecH264, Data: annexb(sps, pps, idr), PTS: 200 * ms, DTS: 100 * ms, Key: true},
		{Codec: media.CodecH264, Data: annexb(b), PTS: 400 * ms, DTS: 200 * ms},
		{Codec: media.CodecH264, Data: annexb(b), PTS: 300 * ms, DTS: 300 * ms},
	}
	for _, u := range units {
		if err := m.unit(u, send); err != nil {
			t.Fatal(err)
		}
	}
	if len(texts) != 3 || texts[0] != `{"type":"init","mime":"video/mp4; codecs=\"avc1.4D401F\"","offset":0}` {
		t.Fatalf("text messages %q", texts)
	}
	if len(msgs) != 4 {
		t.Fatalf("%d binary messages, want init + 3 fragments", len(msgs))
	}
	var init fmp4.Init
	if err := init.Unmarshal(bytes.NewReader(msgs[0])); err != nil {
		t.Fatal(err)
	}
	c, ok := init.Tracks[0].Codec.(*codecs.H264)
	if !ok || !bytes.Equal(c.SPS, sps) || !bytes.Equal(c.PPS, pps) || init.Tracks[0].TimeScale != clock {
		t.Fatalf("init %+v", init.Tracks[0])
	}
	for i, frag := range msgs[1:] {
		var parts fmp4.Parts
		if err := parts.Unmarshal(frag); err != nil {
			t.Fatal(err)
		}
		tr := parts[0].Tracks[0]
		s := tr.Samples[0]
		u := units[i+1]
		if got := int64(tr.BaseTime) + int64(s.PTSOffset) - m.offset; got != ticks(u.PTS) {
			t.Errorf("fragment %d: PTS %d ticks, want %d", i, got, ticks(u.PTS))
		}
		if s.IsNonSyncSample == u.Key {
			t.Errorf("fragment %d: sync %v, want %v", i, !s.IsNonSyncSample, u.Key)
		}
	}
}

// TestMuxerReorder: the reorder message bounds the newest complete picture from both sides: the
// largest PTS − DTS (how far the buffered end may run ahead) and the smallest, when below 0
// (negative composition offsets: pictures up to the newest DTS + lead are in), sent as each
// grows.
func TestMuxerReorder(t *testing.T) {
	sps := []byte{0x67, 0x4d, 0x40, 0x1f, 0x96, 0x52, 0x81, 0x80, 0x6f, 0x4d, 0x41, 0x81, 0x81, 0x90,
		0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x01, 0x48, 0x40}
	au := func(ns ...[]byte) []byte {
		var out []byte
		for _, n := range ns {
			out = append(append(out, 0, 0, 0, 1), n...)
		}
		return out
	}
	var texts []string
	send := func(text bool, m []byte) error {
		if text {
			texts = append(texts, string(m))
		}
		return nil
	}
	var m muxer
	ms := time.Millisecond
	for _, u := range []Unit{
		{Codec: media.CodecH264, Data: au(sps, []byte{0x68, 0xe9, 0x09, 0x35, 0x20}, []byte{0x65, 0x88}), PTS: 1000 * ms, DTS: 1000 * ms, Key: true},
		{Codec: media.CodecH264, Data: au([]byte{0x41, 0x9a}), PTS: 1300 * ms, DTS: 1100 * ms},
		{Codec: media.CodecH264, Data: au([]byte{0x01, 0x9e}), PTS: 1100 * ms, DTS: 1200 * ms},
		{Codec: media.CodecH264, Data: au([]byte{0x01, 0x9e}), PTS: 1200 * ms, DTS: 1300 * ms},
	} {
		if err := m.unit(u, send); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`{"type":"reorder","ticks":18000,"lead":0}`, `{"type":"reorder","ticks":18000,"lead":-9000}`}
	if len(texts) != 3 || texts[1] != want[0] || texts[2] != want[1] {
		t.Fatalf("text messages %q, want init then %q", texts, want)
	}
}

// TestMimeType: RFC 6381 codecs strings from the SPS.
func TestMimeType(t *testing.T) {
	if got := mimeType(media.CodecH264, []byte{0x67, 0x42, 0xc0, 0x1e}); got != `video/mp4; codecs="avc1.42C01E"` {
		t.Fatal(got)
	}
	// H.265 Main, compatibility flags 0x60000000 (reversed: 6), level 93 (3.1).
	sps := []byte{0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x00, 0x90, 0, 0, 0, 0, 0, 93}
	if got := mimeType(media.CodecH265, sps); got != `video/mp4; codecs="hvc1.1.6.L93.B0"` {
		t.Fatal(got)
	}
	// The bundled HEVC clip's SPS as coded: an emulation prevention byte (00 00 03) inside the
	// constraint flags; Main, level 90 (3.0).
	sps = []byte{0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x5a, 0xa0}
	if got := mimeType(media.CodecH265, sps); got != `video/mp4; codecs="hvc1.1.6.L90.B0"` {
		t.Fatal(got)
	}
}
