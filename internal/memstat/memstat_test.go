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

// TestHoldFree: holdFree's memory is resident until Trim gives it back, and no longer counted
// in use.
func TestHoldFree(t *testing.T) {
	Trim()
	in0 := NativeInUse()
	r0, _ := RSS()
	release := holdFree(32 << 20)
	defer release()
	r1, _ := RSS()
	if in := NativeInUse() - in0; in > 1<<20 {
		t.Errorf("%d KiB still in use after holdFree", in>>10)
	}
	if r1-r0 < 24<<20 {
		t.Skipf("malloc returned the freed pages by itself (%d MiB resident of 32)", (r1-r0)>>20)
	}
	Trim()
	if r2, _ := RSS(); r1-r2 < 24<<20 {
		t.Errorf("resident set %d MiB → %d MiB after Trim: the freed pages were not given back", r1>>20, r2>>20)
	}
}

// BenchmarkTrim: malloc_trim(0) with 64 MiB freed but resident (holdFree): what Trim costs
// (app's returnMemory after a stream's removal) per 64 MiB of free pages.
func BenchmarkTrim(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		release := holdFree(64 << 20)
		b.StartTimer()
		Trim()
		b.StopTimer()
		release()
		b.StartTimer()
	}
}

// TestArenas: malloc_info lists at least the main arena (a Go test binary's threads have made
// a few more).
func TestArenas(t *testing.T) {
	n := Arenas()
	if n < 1 {
		t.Fatalf("%d arenas", n)
	}
	t.Logf("%d malloc arenas", n)
}
