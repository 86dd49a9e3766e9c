package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// TestLimitsAdmit: opens beyond sources.max_opening are refused at once (ErrBusy) instead of
// each parking a thread (issue 14, item 3: 140 hanging opens crashed the process), and a slot
// comes back when its open ends; places beyond max_streams are refused while the streams that
// hold them are still opening (issue 25, item 5: the count was the running streams only, so 12
// racing adds with max_streams 4 started 9), and come back when a stream is dropped.
func TestLimitsAdmit(t *testing.T) {
	l := newLimits(&config.Sources{MaxOpening: 3, MaxStreams: 5}, t.TempDir())
	var releases []func()
	for i := range 3 {
		r, err := l.admit(fmt.Sprint("s", i))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	for i := range 140 {
		if _, err := l.admit(fmt.Sprint("busy", i)); !errors.Is(err, defs.ErrBusy) {
			t.Fatalf("admit with every slot taken: %v, want ErrBusy", err)
		}
	}
	releases[0]()
	if _, err := l.admit("s1"); !errors.Is(err, defs.ErrStreamExists) {
		t.Fatalf("admit of an id being opened: %v, want ErrStreamExists", err)
	}
	for i := 3; i < 5; i++ { // s0 opened; s1, s2 still opening; s3, s4 take the last places
		r, err := l.admit(fmt.Sprint("s", i))
		if err != nil {
			t.Fatalf("admit s%d after a release: %v", i, err)
		}
		r()
	}
	releases[1]()
	releases[2]()
	if _, err := l.admit("s5"); !errors.Is(err, defs.ErrStreamLimit) {
		t.Fatalf("admit with 5 places held: %v, want ErrStreamLimit", err)
	}
	l.drop("s3")
	r, err := l.admit("s5")
	if err != nil {
		t.Fatalf("admit after a drop: %v", err)
	}
	r()
}

// TestLimitsRoots: the default roots are the config directory and the assets; never nil (nil
// would allow any path).
func TestLimitsRoots(t *testing.T) {
	dir := t.TempDir()
	l := newLimits(&config.Sources{}, dir)
	if len(l.roots) == 0 || l.roots[0] != dir {
		t.Fatalf("roots %v, want %s first", l.roots, dir)
	}
	l = newLimits(&config.Sources{AllowPaths: []string{"videos"}}, dir)
	if len(l.roots) != 1 || l.roots[0] != dir+"/videos" {
		t.Fatalf("roots %v", l.roots)
	}
	if l = newLimits(&config.Sources{}, ""); l.roots == nil {
		t.Fatal("nil roots")
	}
}
