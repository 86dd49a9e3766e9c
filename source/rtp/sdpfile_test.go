package rtp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source"
)

// TestSDPFileNotQuoted: sdp= names a file the server reads; outside the roots it is refused,
// inside them a file that is not an SDP is refused without quoting a byte of it, and large or
// special files are not read (issue 14, item 1).
func TestSDPFileNotQuoted(t *testing.T) {
	dir := t.TempDir()
	secret := "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\nv=0 hunter2\n"
	notSDP := filepath.Join(dir, "env.sdp")
	if err := os.WriteFile(notSDP, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.sdp")
	if err := os.WriteFile(big, make([]byte, MaxSDPFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	port := sourcetest.UDPPortPair(t)
	open := func(sdp string) error {
		s := &config.Stream{ID: "a", Model: "m", Source: fmt.Sprintf("rtp://127.0.0.1:%d?sdp=%s", port, sdp)}
		src, err := Kind.Open(s, source.Policy{Roots: []string{dir}})
		if err == nil {
			src.Close()
		}
		return err
	}
	for _, tc := range []struct {
		sdp  string
		want error
	}{
		{"/etc/shadow", source.ErrNotAllowed},
		{"/proc/self/environ", source.ErrNotAllowed},
		{notSDP, ErrSDPFile},
		{big, source.ErrTooLarge},
		{dir, source.ErrNotRegular},
		{filepath.Join(dir, strings.Repeat("n", 300)), source.ErrNameTooLong},
	} {
		err := open(tc.sdp)
		if !errors.Is(err, tc.want) {
			t.Errorf("sdp=%.40s: %v, want %v", tc.sdp, err, tc.want)
			continue
		}
		for _, leak := range []string{"AWS", "wJalr", "hunter2", "v=0"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("sdp=%s: error %q quotes the file (%q)", tc.sdp, err, leak)
			}
		}
	}
	// Trusted declarations (nil roots) still read only regular files of bounded size.
	s := &config.Stream{ID: "a", Model: "m", Source: fmt.Sprintf("rtp://127.0.0.1:%d?sdp=/proc/self/environ", port)}
	if _, err := Kind.Open(s, source.Policy{}); err == nil || strings.Contains(err.Error(), "PATH=") {
		t.Errorf("trusted sdp=/proc/self/environ: %v", err)
	}
}
