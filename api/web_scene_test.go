package api_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The bundled person clip (768×432): the first person walks in from the bottom left, stands at
// the table (x 300–480) from about 6 s and leaves to the right, crossing x 620 around 19 s.
const (
	sceneZone = `{"name":"table","polygon":[[380,350],[570,350],[570,432],[380,432]],"classes":["person"]}`
	sceneLine = `{"name":"exit","points":[[620,300],[620,432]],"classes":["person"]}`
)

// sceneView is GET /api/streams/{id}/scene as the tests read it.
type sceneView struct {
	Zones []struct {
		Name    string
		Polygon [][2]float64
		Classes []string
	}
	Lines []struct {
		Name   string
		Points [][2]float64
	}
	Counts *struct {
		Zones []struct {
			Zone                 string
			Objects              int
			Enter, Leave, Loiter int
		}
		Lines []struct {
			Line    string
			In, Out int
		}
	}
}

func (v *sceneView) zone(name string) (pts [][2]float64, ok bool) {
	for _, z := range v.Zones {
		if z.Name == name {
			return z.Polygon, true
		}
	}
	return nil, false
}

func (v *sceneView) line(name string) (pts [][2]float64, ok bool) {
	for _, l := range v.Lines {
		if l.Name == name {
			return l.Points, true
		}
	}
	return nil, false
}

// enters sums a zone's zone.enter count over its classes.
func (v *sceneView) enters(zone string) int {
	n := 0
	if v.Counts != nil {
		for _, c := range v.Counts.Zones {
			if c.Zone == zone {
				n += c.Enter
			}
		}
	}
	return n
}

// nearPts reports whether two point lists agree within tol pixels.
func nearPts(got, want [][2]float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i][0]-want[i][0]) > tol || math.Abs(got[i][1]-want[i][1]) > tol {
			return false
		}
	}
	return true
}

// poll waits for a page condition, with a timeout generous for a loaded machine; on failure it
// saves a screenshot named after the step and fails the test.
func poll[T any](t *testing.T, ctx context.Context, step, expr string, timeout time.Duration) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(timeout),
		chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		shoot(t, ctx, "web-scene-"+step+"-failed.png")
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

// fitJS returns where the frame lies on the page: [left, top, CSS px per frame px,
// devicePixelRatio] (the page's own fit(), the mapping its clicks use).
const fitJS = `(() => { const f = fit(); return [f.x, f.y, f.s, window.devicePixelRatio || 1]; })()`

// clickFrame clicks the live view at frame pixels (x, y), with the page scrolled back to the top
// first (a click on a button lower down scrolls it; the view is near the top, below the sticky
// header).
func clickFrame(t *testing.T, ctx context.Context, pts ...[2]float64) {
	t.Helper()
	f, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.scrollTo(0, 0), `+fitJS))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if err := chromedp.Do(ctx, chromedp.MouseClickXY(f[0]+p[0]*f[2], f[1]+p[1]*f[2])); err != nil {
			t.Fatalf("click at %v: %v", p, err)
		}
	}
}

// TestWebScene drives the zone and line features of the page in headless Chromium, on the person
// clip with the table zone and the exit line: tracked boxes carry their track id, the zone and
// the line are drawn over the frame with their live counts, a zone and a line drawn by clicking
// on the frame and saved are in the stream's scene (read back through the API), an invalid zone
// shows the API's reason, a shape is deleted, and the event list fills from the SSE feed. The
// screenshots (web-scene*.png, web-events.png) are checked for the zone's and the line's colors
// where they are.
func TestWebScene(t *testing.T) {
	ctx := browser(t, 5*time.Minute)
	e := start(t, "")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"office","source":%q,"loop":true,"zones":[%s],"lines":[%s]}`,
		asset(t, "videos/one-by-one-person-detection.mp4"), sceneZone, sceneLine), 201, nil)
	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="office"]`)),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}

	// Tracked boxes: drawn in their track's color, labelled "#id person …".
	n := poll[int](t, ctx, "tracks", `(() => {
		const c = document.querySelector('#canvas');
		const ids = c.dataset.tracks ? c.dataset.tracks.split(',').map(Number) : [];
		if (!ids.length || c.dataset.resultFrame !== c.dataset.frame) return 0;
		if (![...document.querySelectorAll('#dets .tag')].some(t => /^#\d+ person/.test(t.textContent))) return 0;
		const cols = ids.map(id => { const n = parseInt(trackColor(id).slice(1), 16); return [n >> 16, (n >> 8) & 255, n & 255]; });
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			if (cols.some(([r, g, b]) => Math.abs(d[i] - r) < 8 && Math.abs(d[i+1] - g) < 8 && Math.abs(d[i+2] - b) < 8)) n++;
		return n >= 300 ? n : 0;
	})()`, 90*time.Second)
	t.Logf("%d pixels in the tracks' colors", n)

	// The zone and the line with their counts: the table zone has seen someone enter.
	poll[bool](t, ctx, "counts", `(() => {
		const z = document.querySelector('#scene-list .shape[data-kind="zone"][data-name="table"]');
		const l = document.querySelector('#scene-list .shape[data-kind="line"][data-name="exit"]');
		const o = document.querySelector('#overlay');
		return !!z && !!l && +z.dataset.enter >= 1 && /^\d+ inside$/.test(z.querySelector('.count').textContent) &&
			/^in \d+ · out \d+$/.test(l.querySelector('.count').textContent) &&
			o.dataset.zones === '1' && o.dataset.lines === '1';
	})()`, 120*time.Second)
	// On the overlay: the zone's translucent fill inside it, the line's solid color on it.
	px, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`(() => {
		const c = document.querySelector('#overlay').getContext('2d');
		const hex = (s) => { const n = parseInt(s.slice(1), 16); return [n >> 16, (n >> 8) & 255, n & 255]; };
		return [...c.getImageData(475, 400, 1, 1).data, ...hex(sceneColor('table')),
			...c.getImageData(620, 320, 1, 1).data, ...hex(sceneColor('exit'))];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if a := px[3]; a < 40 || a > 115 || !closeRGB(px[0:3], px[4:7], 12) { // 0.22, 0.4 lit by an event
		t.Errorf("zone fill on the overlay: rgba %v, want the zone's color %v at alpha 56 or 102", px[0:4], px[4:7])
	}
	if px[10] != 255 || !closeRGB(px[7:10], px[11:14], 12) {
		t.Errorf("line on the overlay: rgba %v, want %v, opaque", px[7:11], px[11:14])
	}
	checkShot(t, ctx, "web-scene.png", map[string][][2]float64{
		"table": {{380, 350}, {570, 350}},
		"exit":  {{620, 305}, {620, 345}},
	})

	// Draw a zone: four corners, then the first one again to close it; save; the API has it.
	var before sceneView
	e.want("GET", "/api/streams/office/scene", "", 200, &before)
	desk := [][2]float64{{60, 60}, {260, 60}, {260, 200}, {60, 200}}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#add-zone`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-editor`)),
		chromedp.SetValue(chromedp.CSS(`#draft-name`), "desk"),
		chromedp.SetValue(chromedp.CSS(`#draft-classes`), "person"),
	); err != nil {
		t.Fatal(err)
	}
	clickFrame(t, ctx, append(desk, desk[0])...)
	poll[bool](t, ctx, "draw-zone", `(() => { const o = document.querySelector('#overlay');
		return o.dataset.draft === '4' && o.dataset.closed === '1'; })()`, 20*time.Second)
	shootFull(t, ctx, "web-scene-draft.png")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#draft-save`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-list .shape[data-name="desk"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#scene-editor`)),
	); err != nil {
		shoot(t, ctx, "web-scene-save-failed.png")
		t.Fatalf("saving the zone: %v", err)
	}
	var after sceneView
	e.want("GET", "/api/streams/office/scene", "", 200, &after)
	if got, ok := after.zone("desk"); !ok || !nearPts(got, desk, 1.5) {
		t.Fatalf("the scene after saving: desk = %v (%v), want %v", got, ok, desk)
	}
	if !slices.Equal(after.Zones[1].Classes, []string{"person"}) {
		t.Errorf("desk classes %v", after.Zones[1].Classes)
	}
	if _, ok := after.zone("table"); !ok {
		t.Fatal("saving a zone lost the table zone")
	}
	if _, ok := after.line("exit"); !ok {
		t.Fatal("saving a zone lost the exit line")
	}
	// The table zone went back unchanged, so it kept its counts.
	if b, a := before.enters("table"), after.enters("table"); a < b {
		t.Errorf("the table zone's counts restarted when another zone was saved: enter %d → %d", b, a)
	}

	// Draw a line: two clicks end it.
	door := [][2]float64{{100, 300}, {300, 300}}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#add-line`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-editor`)),
		chromedp.SetValue(chromedp.CSS(`#draft-name`), "door"),
	); err != nil {
		t.Fatal(err)
	}
	clickFrame(t, ctx, door...)
	poll[bool](t, ctx, "draw-line", `document.querySelector('#overlay').dataset.closed === '1'`, 20*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#draft-save`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-list .shape[data-kind="line"][data-name="door"]`)),
	); err != nil {
		shoot(t, ctx, "web-scene-line-failed.png")
		t.Fatalf("saving the line: %v", err)
	}
	e.want("GET", "/api/streams/office/scene", "", 200, &after)
	if got, ok := after.line("door"); !ok || !nearPts(got, door, 1.5) {
		t.Fatalf("the scene after saving: door = %v (%v), want %v", got, ok, door)
	}

	// A double-click closes a zone too (its two clicks add one point); Cancel drops the drawing.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#add-zone`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-editor`)),
	); err != nil {
		t.Fatal(err)
	}
	clickFrame(t, ctx, [2]float64{450, 60}, [2]float64{650, 60})
	dbl := [2]float64{650, 200}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fitJS))
	if err != nil {
		t.Fatal(err)
	}
	x, y := f[0]+dbl[0]*f[2], f[1]+dbl[1]*f[2]
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x, y), chromedp.MouseClickXY(x, y, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "double-click", `(() => { const o = document.querySelector('#overlay');
		return o.dataset.draft === '3' && o.dataset.closed === '1'; })()`, 20*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#draft-cancel`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#scene-editor`)),
	); err != nil {
		t.Fatal(err)
	}

	// An invalid zone (two points) is refused by the API, whose reason shows in the page.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#add-zone`)),
		chromedp.WaitVisible(chromedp.CSS(`#scene-editor`)),
		chromedp.SetValue(chromedp.CSS(`#draft-name`), "bad"),
	); err != nil {
		t.Fatal(err)
	}
	clickFrame(t, ctx, [2]float64{500, 100}, [2]float64{650, 150})
	poll[bool](t, ctx, "draw-bad", `document.querySelector('#overlay').dataset.draft === '2'`, 20*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#draft-save`))); err != nil {
		t.Fatal(err)
	}
	msg := poll[string](t, ctx, "error", `document.querySelector('#scene-error').textContent`, 30*time.Second)
	if !strings.Contains(msg, "422") || !strings.Contains(msg, "fewer than 3 points") {
		t.Fatalf("the page shows %q, want the API's 422 reason", msg)
	}
	shootFull(t, ctx, "web-scene-error.png")
	e.want("GET", "/api/streams/office/scene", "", 200, &after)
	if _, ok := after.zone("bad"); ok {
		t.Fatal("the invalid zone was stored")
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#draft-cancel`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#scene-editor`)),
	); err != nil {
		t.Fatal(err)
	}

	// Delete the desk zone: a second click confirms.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#scene-list .shape[data-name="desk"] .del`)),
		chromedp.Click(chromedp.CSS(`#scene-list .shape[data-name="desk"] .del.armed`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#scene-list .shape[data-name="desk"]`)),
	); err != nil {
		shoot(t, ctx, "web-scene-delete-failed.png")
		t.Fatalf("deleting the zone: %v", err)
	}
	e.want("GET", "/api/streams/office/scene", "", 200, &after)
	if _, ok := after.zone("desk"); ok || len(after.Zones) != 1 || len(after.Lines) != 2 {
		t.Fatalf("after deleting desk: %+v", after)
	}

	// The event list: scene events of the office stream, newest first, with track and class.
	ev := poll[string](t, ctx, "events", `(() => {
		const li = document.querySelector('#events-list li.ev[data-stream="office"][data-where]');
		if (!li) return '';
		const txt = ['time', '.ty', '.where', '.st', '.trk', '.detail'].map(s => li.querySelector(s).textContent).join(' ');
		return /^\d\d:\d\d:\d\d\.\d{3} (zone\.(enter|leave|loiter) table|line\.cross exit)/.test(txt) &&
			/office #\d+ person/.test(txt) ? txt : '';
	})()`, 120*time.Second)
	t.Logf("event list entry: %s", ev)
	checkShot(t, ctx, "web-events.png", map[string][][2]float64{"table": {{380, 350}, {570, 350}}})
	noCSPViolations(t, ctx)
}

// shootFull saves a screenshot of the whole page.
func shootFull(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	artifact(t, name, b)
}

func closeRGB(a, b []int, tol int) bool {
	for i := range 3 {
		if d := a[i] - b[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// checkShot takes a screenshot, saves it and checks it: the frame's area is not blank (the
// video is there) and each named zone or line's color is on the screen along the segment between
// the two frame points given (its outline), where the page's fit() places them.
func checkShot(t *testing.T, ctx context.Context, name string, segments map[string][][2]float64) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	artifact(t, name, b)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fitJS))
	if err != nil {
		t.Fatal(err)
	}
	at := func(x, y float64) (int, int) { // frame pixels → screenshot pixels
		return int(math.Round((f[0] + x*f[2]) * f[3])), int(math.Round((f[1] + y*f[2]) * f[3]))
	}
	rgb := func(x, y int) [3]int {
		r, g, b, _ := img.At(x, y).RGBA()
		return [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
	}
	// The video: luminance varies over the frame.
	var sum, sq, cnt float64
	for y := 20.0; y < 432; y += 16 {
		for x := 20.0; x < 768; x += 16 {
			c := rgb(at(x, y))
			l := 0.299*float64(c[0]) + 0.587*float64(c[1]) + 0.114*float64(c[2])
			sum, sq, cnt = sum+l, sq+l*l, cnt+1
		}
	}
	if sd := math.Sqrt(sq/cnt - (sum/cnt)*(sum/cnt)); sd < 10 {
		t.Errorf("%s: the frame area looks blank (luminance s.d. %.1f)", name, sd)
	}
	for shape, seg := range segments {
		hex, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`sceneColor(%q)`, shape)))
		if err != nil {
			t.Fatal(err)
		}
		var want [3]int
		if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2]); err != nil {
			t.Fatalf("color %q: %v", hex, err)
		}
		hits, samples := 0, 0
		for i := 0; i <= 20; i++ {
			x := seg[0][0] + (seg[1][0]-seg[0][0])*float64(i)/20
			y := seg[0][1] + (seg[1][1]-seg[0][1])*float64(i)/20
			sx, sy := at(x, y)
			samples++
		search: // the outline is 2–3 pixels wide: look around the exact spot
			for dy := -2; dy <= 2; dy++ {
				for dx := -2; dx <= 2; dx++ {
					p := image.Point{sx + dx, sy + dy}
					if c := rgb(p.X, p.Y); p.In(img.Bounds()) && closeRGB(c[:], want[:], 24) {
						hits++
						break search
					}
				}
			}
		}
		if hits*10 < samples*7 {
			t.Errorf("%s: %s's color %s found at %d of %d points along it", name, shape, hex, hits, samples)
		}
	}
}
