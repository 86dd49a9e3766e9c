package sigstack

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on linux/amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const saOnstack = 0x08000000 // SA_ONSTACK, <asm-generic/signal-defs.h>

func rtSigaction(t *testing.T, sig syscall.Signal, act, old *kernelSigaction) {
	t.Helper()
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		t.Fatalf("rt_sigaction(%v): %v", sig, errno)
	}
}

// stripOnstack re-installs sig's handler without SA_ONSTACK, the way a native library that
// chains to Go's handler leaves it, and returns the handler as it was.
func stripOnstack(t *testing.T, sig syscall.Signal) kernelSigaction {
	t.Helper()
	var was kernelSigaction
	rtSigaction(t, sig, nil, &was)
	if was.flags&saOnstack == 0 || was.handler < 2 {
		t.Fatalf("%v: handler %#x flags %#x: want Go's, with SA_ONSTACK", sig, was.handler, was.flags)
	}
	bad := was
	bad.flags &^= saOnstack
	rtSigaction(t, sig, &bad, nil)
	t.Cleanup(func() { rtSigaction(t, sig, &was, nil) })
	return was
}

// TestFix: a handler without SA_ONSTACK gets it back, with the same function, mask and other
// flags; default and ignored dispositions and handlers that have it are left alone.
func TestFix(t *testing.T) {
	if c := Fix(); c != nil {
		t.Fatalf("Go's own handlers: Fix changed %v, want nothing", c)
	}
	was := stripOnstack(t, syscall.SIGUSR2) // Go's handler, a signal nothing here sends
	var ign kernelSigaction
	ign.handler = 1 // SIG_IGN
	var prevIgn kernelSigaction
	rtSigaction(t, syscall.SIGWINCH, &ign, &prevIgn)
	t.Cleanup(func() { rtSigaction(t, syscall.SIGWINCH, &prevIgn, nil) })

	if c := Fix(); !slices.Equal(c, []syscall.Signal{syscall.SIGUSR2}) {
		t.Fatalf("Fix changed %v, want [SIGUSR2]", c)
	}
	var now kernelSigaction
	rtSigaction(t, syscall.SIGUSR2, nil, &now)
	if now.handler != was.handler || now.mask != was.mask || now.flags&^uint64(0x04000000) != was.flags&^uint64(0x04000000) {
		t.Fatalf("after Fix: %+v, want %+v (SA_RESTORER aside)", now, was)
	}
	rtSigaction(t, syscall.SIGWINCH, nil, &now)
	if now.handler != 1 || now.flags&saOnstack != 0 {
		t.Fatalf("SIGWINCH ignored: after Fix handler %#x flags %#x, want SIG_IGN untouched", now.handler, now.flags)
	}
	if c := Fix(); c != nil {
		t.Fatalf("a second Fix changed %v, want nothing", c)
	}
}

// TestKeep: a handler that loses SA_ONSTACK after Keep started (a library installing its
// handlers at a session's first run) gets it back within a few intervals, and Report hears of it.
func TestKeep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan []Moved, 16)
	Report(func(m []Moved) { got <- m })
	t.Cleanup(func() { Report(nil) })
	Keep(ctx, 10*time.Millisecond)
	stripOnstack(t, syscall.SIGUSR2)
	select {
	case m := <-got:
		// Go's own handler, in the test binary itself (dladdr names the executable).
		if len(m) != 1 || m[0].Signal != syscall.SIGUSR2 || m[0].Library == "" {
			t.Fatalf("Keep moved %+v, want SIGUSR2 with the file holding its handler", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("Keep did not restore SA_ONSTACK within a minute")
	}
	var now kernelSigaction
	rtSigaction(t, syscall.SIGUSR2, nil, &now)
	if now.flags&saOnstack == 0 {
		t.Fatalf("SIGUSR2 flags %#x after Keep's fix: no SA_ONSTACK", now.flags)
	}
}
