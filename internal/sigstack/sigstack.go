// Package sigstack keeps every signal handler of the process on the alternate signal stack.
//
// Go's runtime gives each of its threads an alternate signal stack (sigaltstack(2)) and installs
// its handlers with SA_ONSTACK; a handler reached without it while a goroutine runs gets the
// goroutine's small stack, and Go's runtime aborts with "fatal error: non-Go code set up signal
// handler without SA_ONSTACK flag" (os/signal, "Go programs that use cgo or SWIG"). Native
// libraries loaded at run time (ONNX Runtime's CUDA execution provider, among others) may install
// handlers, chaining to Go's, without that flag, at load or later (at a session's first run).
// Fix adds the flag to such handlers in place: the handler, its mask and its other flags stay;
// on a thread without an alternate stack (a native library's own) SA_ONSTACK changes nothing.
package sigstack

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

// vsig_onstack adds SA_ONSTACK to signal sig's handler when one is installed without it, and
// then writes the path of the shared object holding the handler (dladdr; "" when unknown) into
// lib (n bytes). Returns 1 when it did, 0 when there was nothing to do, -1 when sigaction failed
// (a signal that cannot be caught, or one reserved by the C library).
static int vsig_onstack(int sig, char* lib, int n) {
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) != 0) return -1;
	if (sa.sa_flags & SA_ONSTACK) return 0;
	if (!(sa.sa_flags & SA_SIGINFO) && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)) return 0;
	sa.sa_flags |= SA_ONSTACK;
	if (sigaction(sig, &sa, NULL) != 0) return -1;
	Dl_info info;
	void* fn = (sa.sa_flags & SA_SIGINFO) ? (void*)sa.sa_sigaction : (void*)sa.sa_handler;
	lib[0] = 0;
	if (dladdr(fn, &info) && info.dli_fname) {
		strncpy(lib, info.dli_fname, n - 1);
		lib[n - 1] = 0;
	}
	return 1;
}

static int vsig_count(void) { return NSIG; }
*/
import "C"

import (
	"context"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Moved is one handler Fix moved onto the signal stack.
type Moved struct {
	Signal  syscall.Signal
	Library string // the shared object holding the handler (dladdr), "" when unknown
}

var (
	reportMu sync.Mutex
	report   func([]Moved)
)

// Report sets the function that Fix calls, from Fix's goroutine, with what it moved whenever
// it moved something (nil: none). vinfer run logs them at debug level.
func Report(f func([]Moved)) {
	reportMu.Lock()
	report = f
	reportMu.Unlock()
}

// Fix adds SA_ONSTACK to every installed handler (signals 1 to NSIG−1) that lacks it and
// returns the signals it changed, in increasing order; nil when every handler had it. Default
// and ignored dispositions stay as they are. It is cheap (two sigaction calls a signal at most)
// and safe to call at any time, from any goroutine; vinfer calls it after loading ONNX Runtime
// (ort.Load), after creating a session and after its first run (infer), and every second while
// it runs (Keep). A library that changes a handler between Fix's read and write of it loses
// that change; those libraries change theirs at load and initialisation, not later.
func Fix() []syscall.Signal {
	var changed []syscall.Signal
	var moved []Moved
	var lib [512]C.char
	for sig := 1; sig < int(C.vsig_count()); sig++ {
		if C.vsig_onstack(C.int(sig), &lib[0], C.int(len(lib))) == 1 {
			changed = append(changed, syscall.Signal(sig))
			moved = append(moved, Moved{Signal: syscall.Signal(sig), Library: C.GoString((*C.char)(unsafe.Pointer(&lib[0])))})
		}
	}
	if len(changed) > 0 {
		reportMu.Lock()
		f := report
		reportMu.Unlock()
		if f != nil {
			f(moved)
		}
	}
	return changed
}

// Keep calls Fix now and then, from a goroutine of its own, every interval until ctx ends (a
// native library may install its handlers late: NVDEC's at a decoder's opening, CUDA's at a
// session's first runs).
func Keep(ctx context.Context, interval time.Duration) {
	Fix()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				Fix()
			}
		}
	}()
}
