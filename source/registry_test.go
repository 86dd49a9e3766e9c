package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/file"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/rtsp"
)

func init() {
	source.Register(file.Kind)
	source.Register(rtsp.Kind)
	source.Register(rtp.Kind)
	source.Register(gb28181.Kind)
}

// TestOpenErrorsKeepSecrets: a password holding '#', '/' or '%' makes the URL unparsable; the
// parse error must not quote any piece of it (issue 14, item 8), for every kind.
func TestOpenErrorsKeepSecrets(t *testing.T) {
	for _, raw := range []string{
		"rtsp://admin:hun#ter2x@127.0.0.1:1/live",
		"rtsp://admin:hun/ter2x@127.0.0.1:1/live",
		"rtsp://admin:hun%zter2x@127.0.0.1:1/live",
		"rtp://admin:hun#ter2x@127.0.0.1:5004?codec=h264",
		"gb28181://admin:hun/ter2x@127.0.0.1:1?transport=udp",
	} {
		s := &config.Stream{ID: "a", Source: raw, Model: "m"}
		_, err := source.Open(s, source.Policy{})
		if err == nil {
			t.Fatalf("%s: opened", raw)
		}
		for _, piece := range []string{"hun", "ter2x", "hunter2x"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("%s: error %q leaks %q", raw, err, piece)
			}
		}
		if !errors.Is(err, source.ErrBadURL) {
			t.Errorf("%s: error %q does not wrap ErrBadURL", raw, err)
		}
	}
}

// TestOpenFileClass: paths the API sends are files only, inside the roots, never URLs FFmpeg
// would follow (issue 14, item 2).
func TestOpenFileClass(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"http:" + long + "@127.0.0.1:1/x", source.ErrNameTooLong},
		{"tcp:" + long + "@127.0.0.1:1", source.ErrNameTooLong},
		{"http:x@127.0.0.1:1/x", source.ErrNotAllowed},
		{"/etc/hostname", source.ErrNotAllowed},
		{dir, source.ErrNotRegular},
		{"file://" + dir + "/../x", source.ErrNotAllowed},
		{"file://" + filepath.Join(dir, "x"), source.ErrNoFile},
	} {
		s := &config.Stream{ID: "a", Source: tc.src, Model: "m"}
		_, err := source.Open(s, source.Policy{Roots: []string{dir}})
		if !errors.Is(err, tc.want) {
			t.Errorf("%.60s: %v, want %v", tc.src, err, tc.want)
		}
	}
	// A symlink inside the roots to a file outside is resolved first.
	link := filepath.Join(dir, "v.mp4")
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	_, err := source.Open(&config.Stream{ID: "a", Source: link, Model: "m"}, source.Policy{Roots: []string{dir}})
	if !errors.Is(err, source.ErrNotAllowed) {
		t.Errorf("symlink out of the roots: %v", err)
	}
}
