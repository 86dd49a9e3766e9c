// Package memstat reads the process's memory use for leak tests and benchmarks: the resident
// set size the kernel reports and the bytes in use in the C heap (glibc malloc), where ONNX
// Runtime, FFmpeg and vinfer's native buffers live.
package memstat

/*
#include <malloc.h>

// in_use is the bytes handed out by malloc and not freed: small and arena chunks (uordblks)
// plus chunks mmap'ed individually (hblkhd). mallinfo2 is glibc ≥ 2.33.
static size_t in_use(void) {
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

// held is the bytes malloc holds from the system: its arenas (sbrk'ed and mmap'ed heaps,
// arena) plus the individually mmap'ed chunks (hblkhd).
static size_t held(void) {
	struct mallinfo2 mi = mallinfo2();
	return mi.arena + mi.hblkhd;
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// arenas counts malloc's arenas (the main one and one per group of threads, up to 8 per core):
// the <heap nr=…> elements of malloc_info's XML. -1 when it cannot tell.
static int arenas(void) {
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) return -1;
	int r = malloc_info(0, f);
	fclose(f);
	int n = 0;
	if (r == 0 && buf != NULL) {
		for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) n++;
	} else {
		n = -1;
	}
	free(buf);
	return n;
}

static int trim(void) { return malloc_trim(0); }

static void *touched(size_t n) {
	void *p = malloc(n);
	if (p != NULL) memset(p, 1, n);
	return p;
}
// fragment mallocs n bytes in chunks of size, touched, then frees all but the last: the freed
// chunks lie below one in use, so malloc keeps their pages (resident) until a trim. One C call,
// one thread, one arena. Returns the chunk left in use.
static void *fragment(size_t n, size_t size) {
	size_t k = n / size;
	if (k < 2) return NULL;
	void **ps = malloc(k * sizeof(void *));
	if (ps == NULL) return NULL;
	for (size_t i = 0; i < k; i++) {
		ps[i] = malloc(size);
		if (ps[i] != NULL) memset(ps[i], 1, size);
	}
	void *last = ps[k - 1];
	for (size_t i = 0; i + 1 < k; i++) free(ps[i]);
	free(ps);
	return last;
}
*/
import "C"

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unsafe"
)

// RSS returns the process's resident set size in bytes (VmRSS of /proc/self/status, Linux).
func RSS() (int64, error) {
	return statusField("VmRSS:")
}

// PeakRSS returns the process's peak resident set size in bytes (VmHWM of /proc/self/status).
func PeakRSS() (int64, error) {
	return statusField("VmHWM:")
}

func statusField(name string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		line := s.Bytes()
		if !bytes.HasPrefix(line, []byte(name)) {
			continue
		}
		f := bytes.Fields(line[len(name):])
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("memstat: unexpected /proc/self/status line %q", line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memstat: %s: %w", name, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("memstat: no %s in /proc/self/status", name)
}

// NativeInUse returns the bytes currently allocated from the C heap (glibc's mallinfo2:
// arena chunks in use plus individually mmap'ed chunks). Memory ONNX Runtime frees to malloc
// leaves this figure at once, even when malloc keeps the pages (RSS).
func NativeInUse() int64 { return int64(C.in_use()) }

// NativeHeld returns the bytes glibc malloc holds from the system (mallinfo2: arenas plus
// individually mmap'ed chunks); NativeHeld − NativeInUse is what malloc keeps free for reuse
// (fragmentation, per-thread arenas), part of it resident.
func NativeHeld() int64 { return int64(C.held()) }

// Arenas returns how many arenas glibc malloc has (malloc_info), -1 when it cannot tell. Each
// thread that allocates is given one, up to 8 per core (MALLOC_ARENA_MAX caps it), and each
// keeps its own free memory: more arenas, more of the C heap held but not in use.
func Arenas() int { return int(C.arenas()) }

// Trim returns free C-heap memory to the kernel (malloc_trim), so that RSS reflects what is in
// use; it reports whether any memory was released.
func Trim() bool { return C.trim() != 0 }

// holdFree leaves n bytes of the C heap freed but resident: 4 KiB chunks freed below one kept
// in use (for tests of Trim, which cannot use cgo themselves); release frees the kept chunk.
func holdFree(n int) (release func()) {
	p := C.fragment(C.size_t(n), 4096)
	return func() { C.free(p) }
}

// cAlloc mallocs n touched bytes (for tests, which cannot use cgo themselves).
func cAlloc(n int) unsafe.Pointer { return C.touched(C.size_t(n)) }

// cFree frees memory from cAlloc.
func cFree(p unsafe.Pointer) { C.free(p) }
