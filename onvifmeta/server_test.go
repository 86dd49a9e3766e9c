package onvifmeta_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
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

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/onvifmeta"
	"github.com/vinfer/vinfer/onvifmeta/metacheck"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
)

const waitLimit = 20 * time.Second

// readClip returns the clip's first n access units, copied.
func readClip(t *testing.T, rel string, n int) []media.AccessUnit {
	t.Helper()
	src := &file.Source{Path: testutil.Asset(t, rel)}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var aus []media.AccessUnit
	for len(aus) < n {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = append([]byte(nil), au.Data...)
		aus = append(aus, c)
	}
	return aus
}

func nalus(data []byte) [][]byte {
	var out [][]byte
	for rest := data; len(rest) > 0; {
		var n []byte
		n, rest = h26x.NextNALU(rest)
		if len(n) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// result is the run's result of frame i: two tracked objects moving right, a line crossing on
// frame 5 and a zone entry on frame 8.
func result(i int, au *media.AccessUnit, w, h int) *sink.Result {
	x := float32(40 + 10*i)
	r := &sink.Result{Stream: "cam1", Frame: int64(i), PTS: au.PTS, Width: w, Height: h, Model: "test",
		Detections: []detect.Detection{
			{ClassID: 0, Label: "person", Score: 0.875, Box: [4]float32{x, 100.5, x + 60, 300.25}, TrackID: 3},
			{ClassID: 2, Label: "car", Score: 0.5, Box: [4]float32{0, float32(h) - 80, 120, float32(h)}, TrackID: 7},
		}}
	switch i {
	case 5:
		r.Events = []event.Event{{Type: event.LineCross, Stream: "cam1", TrackID: 3, Label: "person", Line: "door", Direction: event.In}}
	case 8:
		r.Events = []event.Event{{Type: event.ZoneEnter, Stream: "cam1", TrackID: 7, Label: "car", Zone: "lot<1>"}}
	}
	return r
}

// collector gathers what a client receives.
type collector struct {
	mu       sync.Mutex
	videoTS  []uint32
	video    [][][]byte
	metaTS   []uint32
	docs     [][]byte
	partial  []byte
	partTS   uint32
	metaErrs []error
}

func (c *collector) onMeta(pkt *rtp.Packet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 && pkt.Timestamp != c.partTS {
		c.metaErrs = append(c.metaErrs, fmt.Errorf("metadata packet of timestamp %d inside a document of %d", pkt.Timestamp, c.partTS))
	}
	c.partTS = pkt.Timestamp
	c.partial = append(c.partial, pkt.Payload...)
	if pkt.Marker {
		c.docs = append(c.docs, c.partial)
		c.metaTS = append(c.metaTS, pkt.Timestamp)
		c.partial = nil
	}
}

func (c *collector) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.video), len(c.docs)
}

// play connects a TCP client to url and collects both tracks.
func play(t *testing.T, url string) (*collector, *description.Session) {
	t.Helper()
	u, err := base.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	tcp := gortsplib.ProtocolTCP
	c := &gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Protocol: &tcp}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	desc, _, err := c.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	var h264 *format.H264
	vm := desc.FindFormat(&h264)
	var mm *description.Media
	var meta format.Format
	for _, m := range desc.Medias {
		for _, f := range m.Formats {
			if strings.EqualFold(f.RTPMap(), onvifmeta.MetadataRTPMap) && m.Type == description.MediaTypeApplication {
				mm, meta = m, f
			}
		}
	}
	if vm == nil || mm == nil {
		t.Fatalf("SDP lacks the H.264 or the metadata track: %+v", desc.Medias)
	}
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	dec, err := h264.CreateDecoder()
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	c.OnPacketRTP(vm, h264, func(pkt *rtp.Packet) {
		au, err := dec.Decode(pkt)
		if err != nil {
			if !errors.Is(err, rtph264.ErrMorePacketsNeeded) && !errors.Is(err, rtph264.ErrNonStartingPacketAndNoPrevious) {
				t.Error(err)
			}
			return
		}
		col.mu.Lock()
		col.video = append(col.video, au)
		col.videoTS = append(col.videoTS, pkt.Timestamp)
		col.mu.Unlock()
	})
	c.OnPacketRTP(mm, meta, col.onMeta)
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}
	return col, desc
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsonFrame is a JSON Lines record of the run.
type jsonFrame struct {
	Frame      int64 `json:"frame"`
	Width      int   `json:"width"`
	Height     int   `json:"height"`
	Detections []struct {
		Label   string     `json:"label"`
		Score   float64    `json:"score"`
		Box     [4]float64 `json:"box"`
		TrackID int64      `json:"track_id"`
	} `json:"detections"`
	Events []struct {
		Type    string `json:"type"`
		TrackID int64  `json:"track_id"`
		Line    string `json:"line"`
		Zone    string `json:"zone"`
	} `json:"events"`
}

// TestServeVideoAndMetadata plays a stream's RTSP session with a client: the SDP has the
// H.264 track and the ONVIF metadata track, the video access units are the clip's own, and
// each metadata document validates against the schema's required elements and carries the
// JSON Lines' boxes, ids, classes and events on the matching frame's RTP timestamp.
func TestServeVideoAndMetadata(t *testing.T) {
	const n = 30
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", n)
	if len(aus) < n || !aus[0].Key || aus[0].Codec != media.CodecH264 {
		t.Fatalf("clip: %d access units, first key %v", len(aus), len(aus) > 0 && aus[0].Key)
	}
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	obs := srv.Observer("cam1")
	const w, h = 768, 432

	// The path exists from the stream's first key frame; a wrong password is refused.
	obs.ObserveAccessUnit(&aus[0])
	bad := &gortsplib.Client{}
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	badURL, _ := base.ParseURL("rtsp://vinfer:wrong@" + srv.Addr() + "/cam1")
	if _, _, err := bad.Describe(badURL); err == nil {
		t.Fatal("DESCRIBE with a wrong password answered")
	}
	bad.Close()

	col, _ := play(t, "rtsp://vinfer:s3cret@"+srv.Addr()+"/cam1")
	var jsonl bytes.Buffer
	for i := 1; i < n; i++ {
		obs.ObserveAccessUnit(&aus[i])
		r := result(i, &aus[i], w, h)
		if err := srv.Write(r); err != nil {
			t.Fatal(err)
		}
		jsonl.Write(sink.AppendJSON(nil, r))
		jsonl.WriteByte('\n')
	}
	waitFor(t, "every access unit and document", func() bool {
		v, d := col.counts()
		return v >= n-1 && d >= n-1
	})
	// The stream's closing result: the zone.leave of a track ending inside, no objects.
	end := &sink.Result{Stream: "cam1", End: true, Frame: n - 1, PTS: aus[n-1].PTS, Width: w, Height: h,
		Detections: result(n-1, &aus[n-1], w, h).Detections,
		Events:     []event.Event{{Type: event.ZoneLeave, Stream: "cam1", TrackID: 7, Label: "car", Zone: "lot<1>"}}}
	if err := srv.Write(end); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closing document", func() bool {
		_, d := col.counts()
		return d >= n
	})
	obs.EndOfStream()

	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.metaErrs) > 0 {
		t.Fatal(col.metaErrs[0])
	}
	if len(col.video) != n-1 || len(col.docs) != n {
		t.Fatalf("received %d access units and %d documents, want %d and %d", len(col.video), len(col.docs), n-1, n)
	}
	last, err := metacheck.Validate(col.docs[n-1])
	if err != nil {
		t.Fatal(err)
	}
	leave := metacheck.Event{Topic: onvifmeta.TopicObjectsInside, Rule: "lot<1>", ObjectID: "7", Inside: "false"}
	if len(last.Objects) != 0 || len(last.Events) != 1 || last.Events[0] != leave || col.metaTS[n-1] != col.metaTS[n-2] {
		t.Fatalf("closing document: %+v, timestamp %d after %d", last, col.metaTS[n-1], col.metaTS[n-2])
	}
	var recs []jsonFrame
	sc := bufio.NewScanner(&jsonl)
	for sc.Scan() {
		var f jsonFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, f)
	}
	var utc0 time.Time
	for i := range col.video {
		src := aus[i+1]
		if got, want := col.video[i], nalus(src.Data); !equalNALUs(got, want) {
			t.Fatalf("access unit %d: %d NAL units differ from the source's %d", i+1, len(got), len(want))
		}
		// Both tracks on one clock: equal RTP timestamp steps, following the PTS.
		dv := col.videoTS[i] - col.videoTS[0]
		dm := col.metaTS[i] - col.metaTS[0]
		want := ticks(src.PTS) - ticks(aus[1].PTS)
		if dv != want || dm != want {
			t.Fatalf("frame %d: video step %d, metadata step %d, want %d (90 kHz from the PTS)", i+1, dv, dm, want)
		}
		m, err := metacheck.Validate(col.docs[i])
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i+1, err, col.docs[i])
		}
		if i == 0 {
			utc0 = m.UTC
		} else if d := m.UTC.Sub(utc0) - (src.PTS - aus[1].PTS); d < -time.Millisecond || d > time.Millisecond {
			t.Fatalf("frame %d: UtcTime %v off the PTS step by %v", i+1, m.UTC, d)
		}
		compare(t, i+1, m, &recs[i])
	}
}

// ticks is d on the 90 kHz RTP clock.
func ticks(d time.Duration) uint32 { return uint32(int64(d) * 9 / 100000) }

func equalNALUs(a, b [][]byte) bool {
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

// compare checks a document against the JSON Lines record of the same frame.
func compare(t *testing.T, frame int, m *metacheck.Doc, rec *jsonFrame) {
	t.Helper()
	if rec.Frame != int64(frame) {
		t.Fatalf("JSON Lines record %d for frame %d", rec.Frame, frame)
	}
	if len(m.Objects) != len(rec.Detections) {
		t.Fatalf("frame %d: %d objects, JSON Lines %d", frame, len(m.Objects), len(rec.Detections))
	}
	classes := map[string]string{"person": "Human", "car": "Car"}
	for j, d := range rec.Detections {
		o := m.Objects[j]
		// Back from ONVIF's default transformation to pixels; a tenth of a pixel of JSON rounding.
		px := [4]float64{(o.Left + 1) * float64(rec.Width) / 2, (1 - o.Top) * float64(rec.Height) / 2,
			(o.Right + 1) * float64(rec.Width) / 2, (1 - o.Bottom) * float64(rec.Height) / 2}
		for k := range px {
			if math.Abs(px[k]-d.Box[k]) > 0.1 {
				t.Fatalf("frame %d object %d: box %v, JSON Lines %v", frame, j, px, d.Box)
			}
		}
		if o.ID != d.TrackID || o.Class != classes[d.Label] || math.Abs(o.Likelihood-d.Score) > 0.001 {
			t.Fatalf("frame %d object %d: id %d class %q likelihood %v, JSON Lines %+v", frame, j, o.ID, o.Class, o.Likelihood, d)
		}
	}
	if len(m.Events) != len(rec.Events) {
		t.Fatalf("frame %d: %d events, JSON Lines %d", frame, len(m.Events), len(rec.Events))
	}
	for j, e := range rec.Events {
		got := m.Events[j]
		want := metacheck.Event{ObjectID: strconv.FormatInt(e.TrackID, 10)}
		switch e.Type {
		case "line.cross":
			want.Topic, want.Rule = onvifmeta.TopicLineCrossed, e.Line
		case "zone.enter":
			want.Topic, want.Rule, want.Inside = onvifmeta.TopicObjectsInside, e.Zone, "true"
		}
		if got != want {
			t.Fatalf("frame %d event %d: %+v, want %+v", frame, j, got, want)
		}
	}
}

// TestServeH265: an H.265 stream is served as it is: the SDP has its parameter sets and the
// client's access units equal the source's.
func TestServeH265(t *testing.T) {
	const n = 15
	aus := readClip(t, "videos/person-bicycle-car_hevc.mp4", n)
	if len(aus) < n || !aus[0].Key || aus[0].Codec != media.CodecH265 {
		t.Fatalf("clip: %d access units", len(aus))
	}
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	obs := srv.Observer("hevc")
	obs.ObserveAccessUnit(&aus[0])

	_, c, desc := describe(t, srv.Addr(), "hevc", gortsplib.ProtocolTCP)
	var h265 *format.H265
	vm := desc.FindFormat(&h265)
	if vm == nil || h265.VPS == nil || h265.SPS == nil || h265.PPS == nil || len(desc.Medias) != 2 {
		t.Fatalf("SDP: %+v", desc.Medias)
	}
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	dec, err := h265.CreateDecoder()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got [][][]byte
	c.OnPacketRTP(vm, h265, func(pkt *rtp.Packet) {
		if au, err := dec.Decode(pkt); err == nil {
			mu.Lock()
			got = append(got, au)
			mu.Unlock()
		}
	})
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		obs.ObserveAccessUnit(&aus[i])
	}
	waitFor(t, "every access unit", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n-1
	})
	mu.Lock()
	defer mu.Unlock()
	for i, au := range got {
		if !equalNALUs(au, nalus(aus[i+1].Data)) {
			t.Fatalf("access unit %d differs from the source's", i+1)
		}
	}
}

// describe starts an RTSP client on addr's path over proto and DESCRIBEs it; the client is
// closed when the test ends.
func describe(t *testing.T, addr, path string, proto gortsplib.Protocol) (*base.URL, *gortsplib.Client, *description.Session) {
	t.Helper()
	u, err := base.ParseURL("rtsp://" + addr + "/" + path)
	if err != nil {
		t.Fatal(err)
	}
	c := &gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Protocol: &proto}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	desc, _, err := c.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	return u, c, desc
}
