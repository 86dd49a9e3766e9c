package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/pion/rtp"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/onvifmeta"
	"github.com/vinfer/vinfer/onvifmeta/metacheck"
	"github.com/vinfer/vinfer/source/file"
)

const clip = "videos/person-bicycle-car-detection_reenc.mp4"

// received is what the RTSP client got: access units and metadata documents with their RTP
// timestamps.
type received struct {
	mu      sync.Mutex
	video   [][][]byte
	videoTS []uint32
	docs    [][]byte
	docTS   []uint32
	partial []byte
}

func (r *received) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.video), len(r.docs)
}

// record is a JSON Lines result.
type record struct {
	End        bool    `json:"end"`
	PTS        float64 `json:"pts"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
	Detections []struct {
		Label   string     `json:"label"`
		Score   float64    `json:"score"`
		Box     [4]float64 `json:"box"`
		TrackID int64      `json:"track_id"`
	} `json:"detections"`
}

// TestAppServesVideoWithMetadata runs the whole app on a paced clip with output.rtsp and API
// tokens: a gortsplib client (digest credentials of a scoped token) plays the stream's path,
// the SDP has the H.264 and the ONVIF metadata tracks, the access units are the file's own
// from a key frame on, every metadata document validates (metacheck) and carries the boxes,
// track ids and classes of the JSON Lines result of the same frame, and both tracks step
// their RTP timestamps with the frames' PTS.
func TestAppServesVideoWithMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a model on a paced clip")
	}
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	cfg := &config.Config{Dir: dir,
		Models: []config.Model{{Name: "m", Path: testutil.Asset(t, "models/yolox_nano_416.onnx")}},
		Output: config.Output{JSONL: filepath.Join(dir, "results.jsonl"), HTTP: "none", Token: "t0ken-0123456789ab",
			Tokens: []config.Token{{Label: "vms", Token: "vms-token-0123456789", Scope: config.ScopeViewer, Streams: []string{"lot"}}},
			RTSP:   &config.RTSPOut{Listen: addr}},
	}
	if err := cfg.Output.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			a.Stop()
		}
	}()
	if err := a.AddStream(config.Stream{ID: "lot", Source: testutil.Asset(t, clip), Model: "m", Realtime: true}); err != nil {
		t.Fatal(err)
	}

	url, _ := base.ParseURL("rtsp://vms:vms-token-0123456789@" + addr + "/lot") // a scoped API token
	tcp := gortsplib.ProtocolTCP
	var c *gortsplib.Client
	var desc *description.Session
	testutil.Eventually(t, 60*time.Second, "the stream's path", func() bool {
		// A client per attempt: one whose connection failed (a timeout on a loaded machine)
		// answers every later request with that error.
		c = &gortsplib.Client{Scheme: url.Scheme, Host: url.Host, Protocol: &tcp}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if desc, _, err = c.Describe(url); err != nil {
			c.Close()
			return false
		}
		return true
	})
	defer c.Close()
	var h264 *format.H264
	vm := desc.FindFormat(&h264)
	var mm *description.Media
	for _, m := range desc.Medias {
		if m.Type == description.MediaTypeApplication && len(m.Formats) == 1 && strings.EqualFold(m.Formats[0].RTPMap(), onvifmeta.MetadataRTPMap) {
			mm = m
		}
	}
	if vm == nil || mm == nil || h264.SPS == nil {
		t.Fatalf("SDP lacks the H.264 track with its SPS or the metadata track: %+v", desc.Medias)
	}
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	dec, err := h264.CreateDecoder()
	if err != nil {
		t.Fatal(err)
	}
	got := &received{}
	c.OnPacketRTP(vm, h264, func(pkt *rtp.Packet) {
		au, err := dec.Decode(pkt)
		if err != nil {
			if !errors.Is(err, rtph264.ErrMorePacketsNeeded) && !errors.Is(err, rtph264.ErrNonStartingPacketAndNoPrevious) {
				t.Error(err)
			}
			return
		}
		got.mu.Lock()
		if len(got.video) == 0 && !idr(au) {
			got.mu.Unlock()
			return // joined mid-GOP: from the next key frame
		}
		got.video = append(got.video, au)
		got.videoTS = append(got.videoTS, pkt.Timestamp)
		got.mu.Unlock()
	})
	c.OnPacketRTP(mm, mm.Formats[0], func(pkt *rtp.Packet) {
		got.mu.Lock()
		got.partial = append(got.partial, pkt.Payload...)
		if pkt.Marker {
			got.docs = append(got.docs, got.partial)
			got.docTS = append(got.docTS, pkt.Timestamp)
			got.partial = nil
		}
		got.mu.Unlock()
	})
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, "30 access units and 20 documents", func() bool {
		v, d := got.counts()
		return v >= 30 && d >= 20
	})
	c.Close()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true

	got.mu.Lock()
	defer got.mu.Unlock()
	src := readAll(t, testutil.Asset(t, clip))
	checkVideo(t, got, src)
	checkDocs(t, got, readJSONL(t, filepath.Join(dir, "results.jsonl")))
}

// idr reports an H.264 access unit with an IDR slice.
func idr(au [][]byte) bool {
	for _, n := range au {
		if len(n) > 0 && n[0]&0x1f == 5 {
			return true
		}
	}
	return false
}

// readAll returns the clip's access units' NAL units and PTS (90 kHz).
func readAll(t *testing.T, path string) (aus []srcAU) {
	t.Helper()
	s := &file.Source{Path: path}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		au, err := s.Read(context.Background())
		if err == io.EOF {
			return aus
		}
		if err != nil {
			t.Fatal(err)
		}
		var ns [][]byte
		for rest := au.Data; len(rest) > 0; {
			var n []byte
			n, rest = h26x.NextNALU(rest)
			if len(n) > 0 {
				ns = append(ns, append([]byte(nil), n...))
			}
		}
		aus = append(aus, srcAU{nalus: ns, ts: uint32(int64(au.PTS) * 9 / 100000), key: au.Key})
	}
}

type srcAU struct {
	nalus [][]byte
	ts    uint32
	key   bool
}

// checkVideo: the received access units are the file's own, in order from a key frame, and
// their RTP timestamps step with the file's PTS.
func checkVideo(t *testing.T, got *received, src []srcAU) {
	t.Helper()
	start := -1
	for i := range src {
		if src[i].key && equal(src[i].nalus, got.video[0]) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("the first access unit received (%d NAL units) is no key frame of the file", len(got.video[0]))
	}
	for i, au := range got.video {
		s := src[start+i]
		if !equal(s.nalus, au) {
			t.Fatalf("access unit %d differs from the file's %d", i, start+i)
		}
		if got.videoTS[i]-got.videoTS[0] != s.ts-src[start].ts {
			t.Fatalf("access unit %d: RTP step %d, PTS step %d", i, got.videoTS[i]-got.videoTS[0], s.ts-src[start].ts)
		}
	}
}

func equal(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func readJSONL(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if !r.End {
			recs = append(recs, r)
		}
	}
	return recs
}

// checkDocs: each document validates and is the JSON Lines result of the frame at its time:
// documents follow each other as the results do, their UtcTime and RTP timestamp stepping with
// the results' PTS.
func checkDocs(t *testing.T, got *received, recs []record) {
	t.Helper()
	// The JSON Lines leave out frames without detections and events: so do the documents
	// compared.
	var docs []*metacheck.Doc
	var ts []uint32
	for i, d := range got.docs {
		m, err := metacheck.Validate(d)
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, d)
		}
		if len(m.Objects) > 0 || len(m.Events) > 0 {
			docs, ts = append(docs, m), append(ts, got.docTS[i])
		}
	}
	if len(docs) < 10 {
		t.Fatalf("%d of %d documents have objects", len(docs), len(got.docs))
	}
	tracked := 0
	for _, d := range docs {
		for _, o := range d.Objects {
			if o.ID > 0 {
				tracked++
			}
		}
	}
	if tracked == 0 {
		t.Fatal("no tracked object (ObjectId > 0) in any document")
	}
	// The results of the documents are a run of the JSON Lines; find where it starts.
	var start = -1
	for k := 0; k+len(docs) <= len(recs) && start < 0; k++ {
		if matches(docs, ts, recs[k:k+len(docs)]) == "" {
			start = k
		}
	}
	if start < 0 {
		t.Fatalf("the %d documents are no run of the %d JSON Lines results; against the first: %s", len(docs), len(recs), matches(docs, ts, recs[:min(len(recs), len(docs))]))
	}
}

// matches says how docs differ from recs ("" when they match).
func matches(docs []*metacheck.Doc, ts []uint32, recs []record) string {
	if len(recs) < len(docs) {
		return "fewer results"
	}
	for i, d := range docs {
		r := recs[i]
		step := r.PTS - recs[0].PTS
		if dt := d.UTC.Sub(docs[0].UTC).Seconds() - step; math.Abs(dt) > 0.0015 {
			return "UtcTime off the PTS step"
		}
		if want := uint32(math.Round(step * 90000)); int64(ts[i]-ts[0])-int64(want) > 1 || int64(want)-int64(ts[i]-ts[0]) > 1 {
			return "RTP timestamp off the PTS step"
		}
		if len(d.Objects) != len(r.Detections) {
			return "object count"
		}
		for j, det := range r.Detections {
			o := d.Objects[j]
			px := [4]float64{(o.Left + 1) * float64(r.Width) / 2, (1 - o.Top) * float64(r.Height) / 2,
				(o.Right + 1) * float64(r.Width) / 2, (1 - o.Bottom) * float64(r.Height) / 2}
			for k := range px {
				if math.Abs(px[k]-det.Box[k]) > 0.11 {
					return "box"
				}
			}
			if o.ID != det.TrackID || o.Class != onvifmeta.ClassType(det.Label) || math.Abs(o.Likelihood-det.Score) > 0.001 {
				return fmt.Sprintf("id, class or likelihood: %+v vs %+v", o, det)
			}
		}
	}
	return ""
}
