package config

import (
	"testing"
	"time"
)

func TestEvidenceSection(t *testing.T) {
	c, err := Parse([]byte(`
evidence:
  dir: evidence
  pre: 8s
  post: 4s
  events: [line.cross, zone.loiter]
  max_bytes_per_stream: 2GiB
  max_bytes: 10GB
  max_age: 168h
  min_free: 512MiB
  buffer: 16M
  public_url: https://vinfer.example:8443
`))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Evidence
	if e.Dir != "evidence" || time.Duration(e.Pre) != 8*time.Second || e.MaxBytesPerStream != 2<<30 || e.MaxBytes != 10e9 ||
		e.MinFree != 512<<20 || e.Buffer != 16<<20 || len(e.Events) != 2 || time.Duration(e.MaxAge) != 168*time.Hour {
		t.Fatalf("%+v", e)
	}
	if e.PublicURL != "https://vinfer.example:8443" {
		t.Fatalf("public_url %q", e.PublicURL)
	}
	for _, bad := range []string{"evidence: {pre: 1s}", "evidence: {dir: d, max_bytes: 3 parsecs}", "evidence: {dir: d, pre: -1s}",
		"evidence: {dir: d, public_url: vinfer.local}", "evidence: {dir: d, public_url: 'ftp://h/'}",
		"evidence: {dir: d, public_url: 'http://u:p@h'}", "evidence: {dir: d, public_url: 'http://h/?a=1'}",
		`evidence: {dir: d, public_url: "http://h/\"x"}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
