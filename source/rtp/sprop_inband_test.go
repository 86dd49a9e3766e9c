package rtp

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestSDPSPSOnlyPPSInBand is a camera whose SDP sprop-parameter-sets holds only the SPS and
// which sends the PPS in band before each IDR (no SPS in band): every access unit sent, the
// first GOP included, decodes, as it does with FFmpeg.
func TestSDPSPSOnlyPPSInBand(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0]) // H.264
	var sps, pps []byte
	for _, ps := range c.ParamSets {
		switch h26x.Classify(c.Codec, ps) {
		case h26x.KindSPS:
			sps = ps
		case h26x.KindPPS:
			pps = ps
		}
	}
	if sps == nil || pps == nil {
		t.Fatal("the clip has no SPS or PPS")
	}
	sdp := filepath.Join(t.TempDir(), "cam.sdp")
	doc := "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=cam\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video 5004 RTP/AVP 96\r\n" +
		"a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;sprop-parameter-sets=" +
		base64.StdEncoding.EncodeToString(sps) + "\r\n"
	if err := os.WriteFile(sdp, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LogBuffer
	src := openLogged(t, &Source{SDPFile: sdp}, &logs)

	const n = 150 // more than the clip's first GOP
	seq, ssrc := uint16(1), uint32(0x5b5)
	enc := &rtph264.Encoder{PayloadType: 96, SSRC: &ssrc, InitialSequenceNumber: &seq, PacketizationMode: 1}
	if err := enc.Init(); err != nil {
		t.Fatal(err)
	}
	var pkts []*pionrtp.Packet
	keys := 0
	for i := range n {
		s := c.Samples[i]
		nalus := s.NALUs
		if s.Key {
			keys++
			nalus = append([][]byte{pps}, nalus...)
		}
		p, err := enc.Encode(nalus)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range p {
			q.Timestamp = 1000 + uint32(s.PTS)
		}
		pkts = append(pkts, p...)
	}
	if keys < 2 {
		t.Fatalf("%d key frames in the first %d samples: want the first GOP whole and the next key frame", keys, n)
	}
	sourcetest.NewUDPSender(t, src.Addr().String()).Send(t, pkts, time.Millisecond)

	fc := sourcetest.NewFrameCounter(t, c.Codec)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read %d of %d: %v (stats %+v)", i, n, err, src.Stats())
		}
		fc.Decode(t, au)
	}
	fc.Decode(t, nil)
	if fc.Clean != n {
		t.Fatalf("%d of %d frames decoded (%d with concealed errors); stats %+v\n%s", fc.Clean, n, fc.All,
			src.Stats(), logs.String())
	}
}
