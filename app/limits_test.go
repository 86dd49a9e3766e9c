package app

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// TestLimitsAdmit: opens beyond sources.max_opening are refused at once (ErrBusy) instead of
// each parking a thread (issue 14, item 3: 140 hanging opens crashed the process), and a slot
// comes back when its open ends; streams beyond max_streams are refused.
func TestLimitsAdmit(t *testing.T) {
	l := newLimits(&config.Sources{MaxOpening: 3, MaxStreams: 5}, t.TempDir())
	var releases []func()
	for range 3 {
		r, err := l.admit(0)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	for range 140 {
		if _, err := l.admit(0); !errors.Is(err, defs.ErrBusy) {
			t.Fatalf("admit with every slot taken: %v, want ErrBusy", err)
		}
	}
	releases[0]()
	r, err := l.admit(0)
	if err != nil {
		t.Fatalf("admit after a release: %v", err)
	}
	r()
	if _, err := l.admit(5); !errors.Is(err, defs.ErrStreamLimit) {
		t.Fatalf("admit at max_streams: %v, want ErrStreamLimit", err)
	}
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
