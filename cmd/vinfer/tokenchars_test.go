package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenCharsRefused: vinfer run refuses an API token that a bearer header cannot carry as
// written, before anything starts, naming where it is and not printing it: one with a line
// end or spaces at its ends (a Secret read from a file keeps its newline; the header's value
// loses it, and the newline counted toward the 16 characters), or with non-ASCII letters
// (browsers send headers as ISO-8859-1, or refuse them).
func TestTokenCharsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte("output:\n  jsonl: none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"0123456789abcde\n", " 0123456789abcde", "0123456789abcdé-x"} {
		out, err := runFor(t, path, tok)
		if err == nil || !strings.Contains(out, "VINFER_API_TOKEN") || strings.Contains(out, "0123456789abcde") {
			t.Fatalf("VINFER_API_TOKEN=%q: %v, want an error naming the variable without the secret:\n%s", tok, err, out)
		}
	}
	if err := os.WriteFile(path, []byte("output:\n  jsonl: none\n  token: \"0123456789abcdé-x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runFor(t, path, "")
	if err == nil || !strings.Contains(out, "output.token (line 3)") || strings.Contains(out, "0123456789abcd") {
		t.Fatalf("a non-ASCII output.token: %v, want an error naming output.token (line 3) without the secret:\n%s", err, out)
	}
}
