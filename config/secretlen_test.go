package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortSecretsRefused: an API token or RTSP password under 16 characters is refused when
// the file loads, the error naming the field and its line; 16 characters load.
func TestShortSecretsRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"output:\n  http: 127.0.0.1:8080\n  token: s3cret\n", "output.token (line 3)"},
		{"output:\n  rtsp:\n    listen: 127.0.0.1:8554\n    password: admin123\n", "output.rtsp.password (line 4)"},
		{"output:\n  tokens:\n    - label: wall\n      token: short-one\n      scope: viewer\n", "output.tokens[0].token (line 4)"},
		{"output:\n  token: 0123456789abcde\n", "output.token (line 2)"}, // 15
	} {
		path := filepath.Join(t.TempDir(), "vinfer.yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if !errors.Is(err, ErrShortSecret) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want ErrShortSecret naming %s", c.yaml, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "admin123")) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	if _, err := Parse([]byte("output:\n  token: 0123456789abcdef\n  rtsp: {password: fedcba9876543210}\n")); err != nil {
		t.Fatalf("16 characters: %v", err)
	}
	// Built in code (the API's reload, tests): Validate refuses too, naming the field.
	c := &Config{Output: Output{RTSP: &RTSPOut{Password: "pw"}}}
	if err := c.Validate(); !errors.Is(err, ErrShortSecret) || !strings.Contains(err.Error(), "output.rtsp.password") {
		t.Fatalf("Validate: %v", err)
	}
}
