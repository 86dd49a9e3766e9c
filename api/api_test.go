package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/vinfer/vinfer/internal/testutil"
	"image"
	"image/jpeg"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/vinfer/vinfer/api"
)

const token = "t0ken-for-tests"

// result is one event as SSE and WebSocket deliver it.
type result struct {
	Source     string  `json:"source"`
	Frame      int64   `json:"frame"`
	PTS        float64 `json:"pts"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
	Model      string  `json:"model"`
	Detections []struct {
		ClassID int        `json:"class_id"`
		Label   string     `json:"label"`
		Score   float64    `json:"score"`
		Box     [4]float64 `json:"box"`
	} `json:"detections"`
}

// TestStreamLifecycle drives the API as an operator would: add a looping file stream, watch
// its events over SSE and WebSocket, fetch snapshots, reload the model while it runs, check
// health and readiness, and delete it.
func TestStreamLifecycle(t *testing.T) {
	e := start(t, token)
	var list struct{ Streams []api.StreamView }
	e.want("GET", "/api/streams", "", 200, &list)
	if len(list.Streams) != 0 {
		t.Fatalf("streams at start: %+v", list.Streams)
	}
	video := asset(t, "videos/one-by-one-person-detection.mp4")
	var added api.StreamView
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"office","source":%q,"model":"yolox","loop":true}`, video), 201, &added)
	if added.ID != "office" || added.Model != "yolox" || added.Source != video || !added.Loop {
		t.Fatalf("added stream: %+v", added)
	}

	t.Run("SSE", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/api/events?stream=office&access_token="+token, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET /api/events: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var event string
		events, persons := 0, 0
		lastFrame := int64(-1)
		for sc.Scan() && persons < 3 {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if event != "result" {
					t.Fatalf("event %q, want result", event)
				}
				var r result
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil {
					t.Fatalf("SSE data is not a result: %v: %s", err, line)
				}
				if r.Source != "office" || r.Model != "yolox" || r.Width != 768 || r.Height != 432 {
					t.Fatalf("SSE result: %+v", r)
				}
				if r.Frame <= lastFrame {
					t.Fatalf("SSE frames out of order: %d after %d", r.Frame, lastFrame)
				}
				lastFrame = r.Frame
				events++
				for _, d := range r.Detections {
					if d.Label == "person" && d.Score > 0.5 {
						persons++
						break
					}
				}
			}
		}
		if persons < 3 {
			t.Fatalf("%d SSE events, %d with a person (scan error %v)", events, persons, sc.Err())
		}
	})

	t.Run("WebSocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		hdr := http.Header{"Authorization": {"Bearer " + token}}
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/api/ws?stream=office", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		for i := 0; i < 5; i++ {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var r result
			if typ != websocket.MessageText || json.Unmarshal(msg, &r) != nil || r.Source != "office" {
				t.Fatalf("WebSocket message %d (%v): %s", i, typ, msg)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
		// Without the token the upgrade is refused.
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/api/ws", nil)
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("WebSocket without token: err %v, response %v", err, resp)
		}
	})

	t.Run("Snapshot", func(t *testing.T) {
		// Frames from one-by-one-person-detection show a person most of the time; take a few
		// snapshots until one has a person box drawn.
		var boxed, bare image.Image
		testutil.Eventually(t, 60*time.Second, "a decoded frame to snapshot", func() bool {
			resp, _ := e.do("GET", "/api/streams/office/snapshot.jpg?boxes=0", "")
			return resp.StatusCode != 503
		})
		for i := 0; i < 100 && boxed == nil; i++ {
			resp, b := e.do("GET", "/api/streams/office/snapshot.jpg", "")
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
				t.Fatalf("snapshot: %s %q: %s", resp.Status, resp.Header.Get("Content-Type"), b)
			}
			img, err := jpeg.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if img.Bounds().Dx() != 768 || img.Bounds().Dy() != 432 {
				t.Fatalf("snapshot is %v, want 768x432", img.Bounds())
			}
			if resp.Header.Get("X-Vinfer-Frame") == "" {
				t.Fatal("snapshot without X-Vinfer-Frame")
			}
			if resp.Header.Get("X-Vinfer-Result-Frame") == resp.Header.Get("X-Vinfer-Frame") && cyan(img) > 400 {
				boxed = img
				artifact(t, "snapshot.jpg", b)
			}
		}
		if boxed == nil {
			t.Fatal("no snapshot had its own frame's result with a person box drawn")
		}
		resp, b := e.do("GET", "/api/streams/office/snapshot.jpg?boxes=0&width=384&quality=60", "")
		if resp.StatusCode != 200 {
			t.Fatalf("bare snapshot: %s: %s", resp.Status, b)
		}
		bare, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if bare.Bounds().Dx() != 384 || bare.Bounds().Dy() != 216 {
			t.Fatalf("scaled snapshot is %v, want 384x216", bare.Bounds())
		}
		if n := cyan(bare); n > 100 {
			t.Fatalf("the bare frame has %d box-colored pixels: boxes drawn though boxes=0?", n)
		}
	})

	t.Run("ReloadModel", func(t *testing.T) {
		before := inferred(e, "office")
		var m api.ModelView
		e.want("POST", "/api/models/yolox/reload", "", 200, &m)
		if !m.Loaded || m.Loads != 2 || m.Family != "yolox" || m.Input == nil || len(m.Streams) != 1 {
			t.Fatalf("reloaded model: %+v", m)
		}
		testutil.Eventually(t, 30*time.Second, "inference on the reloaded model", func() bool { return inferred(e, "office") > before+5 })
	})

	t.Run("Health", func(t *testing.T) {
		resp, b := e.doToken("GET", "/healthz", "", "")
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"ok"`) {
			t.Fatalf("healthz: %s %s", resp.Status, b)
		}
		var ready struct{ Ready bool }
		resp, b = e.doToken("GET", "/readyz", "", "")
		if resp.StatusCode != 200 || json.Unmarshal(b, &ready) != nil || !ready.Ready {
			t.Fatalf("readyz: %s %s", resp.Status, b)
		}
	})

	t.Run("Metrics", func(t *testing.T) {
		b := e.want("GET", "/metrics", "", 200, nil)
		for _, want := range []string{
			`vinfer_frames_inferred_total{stream="office"}`,
			`vinfer_stage_duration_seconds_bucket{model="yolox",stage="inference"`,
			`vinfer_events_sent_total{transport="sse"}`,
			`vinfer_events_sent_total{transport="websocket"}`,
			`vinfer_model_reloads_total{model="yolox",result="ok"} 1`,
			`vinfer_http_requests_total{code="201",route="/api/streams"} 1`,
			`vinfer_streams_active 1`,
		} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		e.want("GET", "/debug/vars", "", 200, nil)
		e.want("GET", "/debug/pprof/", "", 200, nil)
	})

	var one api.StreamView
	e.want("GET", "/api/streams/office", "", 200, &one)
	if one.State != "running" || one.Decoded == 0 || one.Inferred == 0 || one.Classes["person"] == 0 || one.Last == nil {
		t.Fatalf("stream view: %+v", one)
	}
	if one.InferredFPS <= 0 || one.LatencyMS <= 0 {
		t.Fatalf("stream rates: %v fps, %v ms", one.InferredFPS, one.LatencyMS)
	}

	resp, b := e.do("DELETE", "/api/streams/office", "")
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE: %s: %s", resp.Status, b)
	}
	e.want("GET", "/api/streams/office", "", 404, nil)
	e.want("GET", "/api/streams", "", 200, &list)
	if len(list.Streams) != 0 {
		t.Fatalf("streams after delete: %+v", list.Streams)
	}
}

// cyan counts pixels near the person class's box color (palette[0], #4cc9f0): a video frame of
// the office has almost none, a drawn box has hundreds.
func cyan(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0x4c) && near(g>>8, 0xc9) && near(bl>>8, 0xf0) {
				n++
			}
		}
	}
	return n
}

func near(v, want uint32) bool { return v+40 > want && v < want+40 }

func inferred(e *env, id string) int64 {
	var v api.StreamView
	e.want("GET", "/api/streams/"+id, "", 200, &v)
	return v.Inferred
}

// TestBadRequests: malformed or impossible requests get 4xx JSON errors that say what to fix,
// and a stream already running is not disturbed by them.
func TestBadRequests(t *testing.T) {
	e := start(t, token)
	video := asset(t, "videos/car-detection.mp4")
	var cars api.StreamView // model defaults to the only one; a realtime file is a live stream
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cars","source":%q,"loop":true,"realtime":true}`, video), 201, &cars)
	if !cars.Realtime || !cars.Live {
		t.Fatalf("realtime file: %+v", cars)
	}
	testutil.Eventually(t, 30*time.Second, "first inferred frames", func() bool { return inferred(e, "cars") > 0 })
	before := inferred(e, "cars")

	for _, c := range []struct {
		name, method, path, body, token string
		code                            int
		says                            string
	}{
		{"no token", "GET", "/api/streams", "", "-", 401, "missing bearer token"},
		{"wrong token", "GET", "/api/streams", "", "nope", 401, "wrong bearer token"},
		{"wrong token on metrics", "GET", "/metrics", "", "nope", 401, "wrong bearer token"},
		{"malformed JSON", "POST", "/api/streams", `{"id":"x",`, "", 400, "JSON"},
		{"syntax error", "POST", "/api/streams", `{"id":"x" "source":"y"}`, "", 400, "malformed JSON at byte"},
		{"empty body", "POST", "/api/streams", "", "", 400, "empty body"},
		{"unknown field", "POST", "/api/streams", `{"id":"x","source":"y","modle":"yolox"}`, "", 400, `unknown field "modle"`},
		{"wrong type", "POST", "/api/streams", `{"id":"x","source":"y","interval":"5"}`, "", 400, `"interval" must be a JSON int`},
		{"two objects", "POST", "/api/streams", `{"id":"x","source":"y"}{}`, "", 400, "data after the JSON object"},
		{"missing fields", "POST", "/api/streams", `{}`, "", 400, `id is required`},
		{"missing source", "POST", "/api/streams", `{"id":"x"}`, "", 400, `source is required`},
		{"bad decoder", "POST", "/api/streams", `{"id":"x","source":"y","decoder":"gpu"}`, "", 400, `decoder "gpu": unknown value (use cpu or nvdec)`},
		{"gpu without nvdec", "POST", "/api/streams", `{"id":"x","source":"y","gpu":0}`, "", 400, `gpu applies to decoder: nvdec only`},
		{"nvdec on a cpu model", "POST", "/api/streams", fmt.Sprintf(`{"id":"x","source":%q,"decoder":"nvdec"}`, video), "", 422, `needs provider: cuda`},
		{"bad rtp parameter", "POST", "/api/streams", `{"id":"x","source":"rtp://127.0.0.1:0?codec=h264&pt=abc"}`, "", 422, `pt="abc" is not a number`},
		{"unknown rtp parameter", "POST", "/api/streams", `{"id":"x","source":"rtp://127.0.0.1:0?codec=h264&ssrcc=1"}`, "", 422, `unknown ssrcc`},
		{"bad id", "POST", "/api/streams", `{"id":"a/b","source":"y"}`, "", 400, "letters, digits"},
		{"unknown model", "POST", "/api/streams", `{"id":"x","source":"y","model":"resnet"}`, "", 400, `model "resnet" is not declared`},
		{"duplicate id", "POST", "/api/streams", fmt.Sprintf(`{"id":"cars","source":%q}`, video), "", 409, "already exists"},
		{"missing file", "POST", "/api/streams", fmt.Sprintf(`{"id":"x","source":%q}`, filepath.Join(filepath.Dir(video), "nope.mp4")), "", 422, "no such file"},
		{"file outside the allowed directories", "POST", "/api/streams", `{"id":"x","source":"/nonexistent/clip.mp4"}`, "", 403, "outside the allowed directories"},
		{"bad scheme", "POST", "/api/streams", `{"id":"x","source":"ftp://host/clip.mp4"}`, "", 422, "unknown source scheme"},
		{"bad drop policy", "POST", "/api/streams", `{"id":"x","source":"y","drop":"newest"}`, "", 400, "drop"},
		{"unknown stream", "GET", "/api/streams/nope", "", "", 404, `no stream "nope"`},
		{"delete unknown stream", "DELETE", "/api/streams/nope", "", "", 404, `no stream "nope"`},
		{"snapshot of unknown stream", "GET", "/api/streams/nope/snapshot.jpg", "", "", 404, `no stream "nope"`},
		{"bad snapshot quality", "GET", "/api/streams/cars/snapshot.jpg?quality=500", "", "", 400, "quality"},
		{"events of unknown stream", "GET", "/api/events?stream=nope", "", "", 404, `no stream "nope"`},
		{"reload unknown model", "POST", "/api/models/nope/reload", "", "", 404, `no model "nope"`},
		{"wrong method", "PUT", "/api/streams/cars", "{}", "", 405, "method not allowed"},
		{"unknown route", "GET", "/api/nothing", "", "", 404, "GET /api lists the routes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := token
			switch c.token {
			case "-":
				tok = ""
			case "":
			default:
				tok = c.token
			}
			resp, b := e.doToken(c.method, c.path, c.body, tok)
			var body struct {
				Error  string
				Status int
			}
			if resp.StatusCode != c.code || json.Unmarshal(b, &body) != nil || body.Status != c.code {
				t.Fatalf("%s %s: %s, want %d with a JSON error: %s", c.method, c.path, resp.Status, c.code, b)
			}
			if !strings.Contains(body.Error, c.says) {
				t.Fatalf("%s %s: error %q does not say %q", c.method, c.path, body.Error, c.says)
			}
		})
	}
	var v api.StreamView
	e.want("GET", "/api/streams/cars", "", 200, &v)
	if v.State != "running" || v.Error != "" {
		t.Fatalf("the running stream was disturbed: %+v", v)
	}
	testutil.Eventually(t, 30*time.Second, "the running stream to go on", func() bool { return inferred(e, "cars") > before+10 })
	if v.Dropped["decode_error"] != 0 || v.Dropped["infer_error"] != 0 {
		t.Fatalf("errors on the running stream: %v", v.Dropped)
	}
}

// TestCredentialsRedacted: a camera URL's user and password never appear in responses or logs.
func TestCredentialsRedacted(t *testing.T) {
	e := start(t, "")
	const secret = "pa55w0rd-xyz"
	src := "rtsp://admin:" + secret + "@127.0.0.1:1/Streaming/Channels/101?token=" + secret
	var v api.StreamView
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cam","source":%q,"transport":"tcp"}`, src), 201, &v)
	if want := "rtsp://REDACTED@127.0.0.1:1/Streaming/Channels/101?token=REDACTED"; v.Source != want {
		t.Fatalf("source in the response: %q, want %q", v.Source, want)
	}
	// The camera does not answer (nothing listens on port 1): the source keeps retrying and
	// logs its failures meanwhile.
	testutil.Eventually(t, 30*time.Second, "a failed connection attempt", func() bool {
		var v api.StreamView
		e.want("GET", "/api/streams/cam", "", 200, &v)
		return v.SourceStats != nil && v.SourceStats.ConnectFailures > 0
	})
	var all []byte
	for _, p := range []string{"/api/streams", "/api/streams/cam", "/readyz", "/metrics", "/debug/vars"} {
		_, b := e.do("GET", p, "")
		all = append(all, b...)
	}
	var ready struct {
		Ready    bool
		Waiting  []string
		Starting []string
	}
	// Models loaded: ready, the camera listed as starting; not ready in the strict view.
	_, b := e.do("GET", "/readyz", "")
	if json.Unmarshal(b, &ready) != nil || !ready.Ready || len(ready.Starting) != 1 {
		t.Fatalf("readyz with a camera that does not answer: %s", b)
	}
	_, b = e.do("GET", "/readyz?streams=all", "")
	if json.Unmarshal(b, &ready) != nil || ready.Ready || len(ready.Waiting) != 1 {
		t.Fatalf("readyz?streams=all with a camera that does not answer: %s", b)
	}
	e.want("DELETE", "/api/streams/cam", "", 204, nil)
	if strings.Contains(string(all), secret) || strings.Contains(string(all), "admin") {
		t.Fatalf("a response leaks the credentials")
	}
	if logs := e.logs.String(); strings.Contains(logs, secret) || strings.Contains(logs, "admin:") {
		t.Fatalf("the logs leak the credentials:\n%s", logs)
	}
	if !strings.Contains(e.logs.String(), "rtsp://REDACTED@127.0.0.1:1") {
		t.Logf("logs:\n%s", e.logs.String())
		t.Fatal("the logs do not name the (redacted) source at all")
	}
}

// TestSceneBadInput: zones and lines that cannot work are refused with the field named, and the
// running stream is untouched. The same declarations get the same answer, 422, whether they
// come with a new stream (POST) or replace a stream's scene (PUT); POST answered 400 for those
// its declaration check caught and 422 for the others.
func TestSceneBadInput(t *testing.T) {
	e := start(t, "")
	video := asset(t, "videos/car-detection.mp4")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cars","source":%q,"loop":true}`, video), 201, nil)
	for _, c := range []struct{ scene, says string }{
		{`"zones":[{"name":"z","polygon":[[1,1],[9,9]]}]`, "fewer than 3 points"},
		{`"zones":[{"name":"z","polygon":[[0,0],[100,100],[100,0],[0,100]]}]`, "self-intersecting"},
		{`"zones":[{"name":"z","polygon":[[1,1],[50,1],[50,50]]},{"name":"z","polygon":[[1,1],[60,1],[60,60]]}]`, "z"},
		{`"lines":[{"name":"l","points":[[5,5],[5,5]]}]`, "zero length"},
		{`"lines":[{"name":"","points":[[0,5],[50,5]]}]`, "name"},
		{`"lines":[{"name":"l","points":[[0,5],[50,5]],"classes":["unicorn"]}]`, `unknown class \"unicorn\"`},
		{`"zones":[{"name":"z","polygon":[[1,1],[50,1],[50,50]],"classes":["unicorn"]}]`, `unknown class \"unicorn\"`},
	} {
		resp, b := e.do("PUT", "/api/streams/cars/scene", "{"+c.scene+"}")
		if resp.StatusCode != 422 || !strings.Contains(string(b), c.says) {
			t.Errorf("PUT scene {%s}: %s %s, want 422 saying %q", c.scene, resp.Status, b, c.says)
		}
		resp, b = e.do("POST", "/api/streams", fmt.Sprintf(`{"id":"cars2","source":%q,%s}`, video, c.scene))
		if resp.StatusCode != 422 || !strings.Contains(string(b), c.says) {
			t.Errorf("POST with {%s}: %s %s, want 422 saying %q", c.scene, resp.Status, b, c.says)
		}
	}
	// A declaration that is wrong besides its scene stays a bad request.
	resp, b := e.do("POST", "/api/streams", `{"id":"a/b","source":"y","lines":[{"name":"l","points":[[5,5],[5,5]]}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "letters, digits") {
		t.Errorf("POST with a bad id and a bad line: %s %s, want 400", resp.Status, b)
	}
	if _, ok := e.app.Stream("cars2"); ok {
		t.Fatal("a stream with a bad scene was added")
	}
	var sv api.SceneView
	e.want("PUT", "/api/streams/cars/scene", `{"lines":[{"name":"l","points":[[0,5],[50,5]],"classes":["car"]}]}`, 200, &sv)
	if len(sv.Lines) != 1 || sv.Lines[0].Name != "l" {
		t.Fatalf("scene %+v", sv)
	}
}
