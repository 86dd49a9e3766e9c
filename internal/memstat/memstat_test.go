package memstat

import "testing"

func TestRSS(t *testing.T) {
	before, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 60<<20 {
		t.Errorf("RSS grew by %d bytes after touching 64 MiB", after-before)
	}
	if peak, err := PeakRSS(); err != nil || peak < after {
		t.Errorf("peak RSS %d (err %v) below RSS %d", peak, err, after)
	}
	b[0] = 0
}

func TestNativeInUse(t *testing.T) {
	before := NativeInUse()
	p := cAlloc(32 << 20)
	if p == nil {
		t.Fatal("malloc failed")
	}
	if d := NativeInUse() - before; d < 32<<20 || d > 33<<20 {
		t.Errorf("in use grew by %d bytes after a 32 MiB malloc", d)
	}
	cFree(p)
	if d := NativeInUse() - before; d > 1<<20 {
		t.Errorf("in use still %d bytes above the start after free", d)
	}
	Trim()
}
