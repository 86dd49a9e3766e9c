package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrackMOT(t *testing.T) {
	dir := filepath.Join(assets(t), "tracking", "mot15", "TUD-Campus")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s missing (run scripts/setup.sh): %v", dir, err)
	}
	stdout, stderr, code := vinfer(t, "track", "--detections", filepath.Join(dir, "det.txt"), "--format", "mot",
		"--fps", "25", "--gt", filepath.Join(dir, "gt.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 200 || !strings.HasPrefix(lines[0], "1,1,") || !strings.HasSuffix(lines[0], ",-1,-1,-1") {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
	if !strings.HasPrefix(stderr, "MOTA 63.0 IDF1 73.7") {
		t.Fatalf("scores %q", stderr)
	}
}

func TestTrackErrors(t *testing.T) {
	det := filepath.Join(t.TempDir(), "det.txt")
	if err := os.WriteFile(det, []byte("1,-1,0,0,10,10,0.9,-1,-1,-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no detections", []string{"track"}, "needs --detections"},
		{"format", []string{"track", "--detections", "x", "--format", "json"}, "only mot"},
		{"fps", []string{"track", "--detections", "x", "--fps", "0"}, "--fps"},
		{"missing file", []string{"track", "--detections", "/nonexistent/det.txt"}, "no such file"},
		{"threshold", []string{"track", "--detections", det, "--match-thresh", "2"}, "MatchThresh"},
		{"box", []string{"track", "--detections", det, "--box", "mean"}, "--box"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := vinfer(t, c.args...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, c.want)
			}
		})
	}
}
