package outbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"mqtt": true, "kafka-1": true, "a.b_c": true, "0": true,
		"": false, ".hidden": false, "-x": false, "a/b": false, "a b": false, "x.tmp": false,
		"0123456789012345678901234567890123456789012345678901234567890123":  true,
		"01234567890123456789012345678901234567890123456789012345678901234": false,
	} {
		if validName(name) != want {
			t.Errorf("validName(%q) = %v", name, !want)
		}
	}
}

func TestCursorFile(t *testing.T) {
	dir := t.TempDir()
	for _, seq := range []uint64{0, 7, 1 << 60} {
		if err := writeCursor(dir, "c", seq, true); err != nil {
			t.Fatal(err)
		}
		got, err := readCursor(filepath.Join(dir, "c"+cursorExt))
		if err != nil || got != seq {
			t.Fatalf("got %d %v, want %d", got, err, seq)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c"+cursorExt+tmpExt)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	b := encodeCursor(9)
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if _, err := decodeCursor(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	if _, err := decodeCursor(append(b, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatal("long cursor accepted")
	}
}
