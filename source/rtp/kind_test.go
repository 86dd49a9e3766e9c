package rtp

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/udpmux"
)

// TestPortClash: a stream whose port another stream holds is refused with a message naming
// that stream, and, for the port after another stream's (its RTCP port), the rule.
func TestPortClash(t *testing.T) {
	port := sourcetest.UDPPortPair(t)
	open := func(id string, port int, query string) error {
		s, err := Kind.Open(&config.Stream{ID: id, Source: fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264%s", port, query), Model: "m"}, source.Policy{})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return err
	}
	if err := open("cam1", port, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    string
		port  int
		query string
		want  string
	}{
		{"cam2", port, "", "is taken by stream cam1: streams share a port only with an ssrc= each"},
		{"cam3", port + 1, "", "is the RTCP port of stream cam1"},
	} {
		err := open(c.id, c.port, c.query)
		if !errors.Is(err, udpmux.ErrTaken) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %d: %v, want %q", c.id, c.port, err, c.want)
		}
		t.Log(err)
	}
}
