package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortTokenRefused: vinfer run refuses an API token under 16 characters from the file
// (naming output.token and its line) and from VINFER_API_TOKEN (naming the variable), before
// anything starts; the secret itself is not printed.
func TestShortTokenRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte("output:\n  jsonl: none\n  token: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runFor(t, path, "")
	if err == nil || !strings.Contains(out, "output.token (line 3)") || strings.Contains(out, "s3cret") {
		t.Fatalf("a short output.token: %v, want an error naming output.token (line 3) without the secret:\n%s", err, out)
	}

	if err := os.WriteFile(path, []byte("output:\n  jsonl: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runFor(t, path, "env-s3cret")
	if err == nil || !strings.Contains(out, "VINFER_API_TOKEN") || strings.Contains(out, "env-s3cret") {
		t.Fatalf("a short VINFER_API_TOKEN: %v, want an error naming the variable without the secret:\n%s", err, out)
	}
}

// runFor runs vinfer run with config path serving on a free port, VINFER_API_TOKEN set to
// token when not empty; a run still going after a minute (the token taken) is killed.
func runFor(t *testing.T, path, token string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path, "--http", "127.0.0.1:0")
	cmd.Env = os.Environ()
	if token != "" {
		cmd.Env = append(cmd.Env, "VINFER_API_TOKEN="+token)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
