// Package browsertest starts headless Chromium for tests of the web page (chromedp), with the
// flags this project's machines need: no sandbox (root), no GPU, no background networking (the
// network is closed), a throw-away profile.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the browser's path: $VINFER_CHROMIUM, Debian's chromium, or chromium on
// PATH; it skips the test when there is none.
func Chromium(t testing.TB) string {
	if p := os.Getenv("VINFER_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("no Chromium (apt-get install chromium, or set VINFER_CHROMIUM)")
	return ""
}

// New starts headless Chromium with a w×h window and returns its context, which ends after
// timeout or at the test's end.
func New(t testing.TB, timeout time.Duration, w, h int) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	return bctx
}
