package record_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/internal/testutil/browsertest"
)

// frameJS loads src in a <video>, seeks to t (s) and answers its duration and a hash of the
// frame shown (drawn on a canvas).
const frameJS = `async function frameAt(src, t) {
	const v = document.createElement('video');
	v.muted = true; v.preload = 'auto'; v.src = src;
	document.body.append(v);
	await new Promise((ok, bad) => { v.onloadeddata = ok; v.onerror = () => bad(new Error(src + ': ' + (v.error && v.error.message))); });
	v.currentTime = t;
	await new Promise(ok => { v.onseeked = ok; });
	await new Promise(ok => { v.requestVideoFrameCallback(ok); setTimeout(ok, 500); });
	const c = document.createElement('canvas');
	c.width = v.videoWidth; c.height = v.videoHeight;
	const g = c.getContext('2d');
	g.drawImage(v, 0, 0);
	const d = g.getImageData(0, 0, c.width, c.height).data;
	let h = 0;
	for (let i = 0; i < d.length; i += 4) h = (Math.imul(h, 31) + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) >>> 0;
	v.remove();
	return {duration: v.duration, hash: h};
}`

type shown struct {
	Duration float64 `json:"duration"`
	Hash     uint32  `json:"hash"`
}

// Chromium honours the export's edit list: an export from mid-GOP lasts the range, and at its
// time 0 it shows the frame an export from the GOP's key frame shows at the same source time,
// not the key frame.
func TestExportEditListInChromium(t *testing.T) {
	r, _, _ := recordClip(t, sample, 10*time.Second)
	dir := t.TempDir()
	from, to := t0.Add(4400*time.Millisecond), t0.Add(8700*time.Millisecond)
	for name, f := range map[string]time.Time{"mid.mp4": from, "key.mp4": t0.Add(4 * time.Second)} {
		b, _ := os.ReadFile(export(t, r, f, to))
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<!doctype html><body><script>"+frameJS+"</script></body>"), 0o644)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	ctx := browsertest.New(t, 2*time.Minute, 400, 300)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/index.html")); err != nil {
		t.Fatal(err)
	}
	at := func(name string, s float64) shown {
		t.Helper()
		js := "frameAt('/" + name + "', " + strconv.FormatFloat(s, 'f', 3, 64) + ")"
		v, err := chromedp.Run(ctx, chromedp.Evaluate[shown](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	mid, key, keyStart := at("mid.mp4", 0.05), at("key.mp4", 0.45), at("key.mp4", 0.05)
	t.Logf("Chromium: mid-GOP export %.3f s, %08x at 0; key-frame export %.3f s, %08x at 0.4 s, %08x at 0", mid.Duration, mid.Hash, key.Duration, key.Hash, keyStart.Hash)
	if d := mid.Duration; d < 4.2 || d > 4.4 {
		t.Errorf("Chromium: the export of 4.3 s lasts %.3f s", d)
	}
	if d := key.Duration; d < 4.6 || d > 4.8 {
		t.Errorf("Chromium: the export of 4.7 s lasts %.3f s", d)
	}
	if mid.Hash != key.Hash || mid.Hash == keyStart.Hash {
		t.Errorf("Chromium shows at the mid-GOP export's start %08x; the frame at 4.4 s is %08x, the key frame at 4 s %08x", mid.Hash, key.Hash, keyStart.Hash)
	}
}
