// A stand-in for a native library that installs signal handlers the way some do: when loaded,
// it installs handlers for SIGINT, SIGTERM, SIGSEGV and SIGWINCH that chain to the previous ones, without
// SA_ONSTACK. Loaded as ONNX Runtime (VINFER_ORT_LIB), it passes OrtGetApiBase on to the real
// library at $SIGSHIM_ORT. Its handler writes "sigshim: chained N" to stderr the first time it
// forwards signal N (write(2) only: async-signal-safe).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sigaction prev[NSIG];
static volatile sig_atomic_t told[NSIG];

static void handler(int sig, siginfo_t* info, void* uc) {
	if (!told[sig]) {
		told[sig] = 1;
		char msg[] = "sigshim: chained 00\n";
		msg[17] = '0' + sig / 10;
		msg[18] = '0' + sig % 10;
		(void)!write(2, msg, sizeof msg - 1);
	}
	struct sigaction* p = &prev[sig];
	if (p->sa_flags & SA_SIGINFO) {
		if (p->sa_sigaction) p->sa_sigaction(sig, info, uc);
	} else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
		p->sa_handler(sig);
	}
}

__attribute__((constructor)) static void install(void) {
	int sigs[] = {SIGINT, SIGTERM, SIGSEGV, SIGWINCH};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART; // no SA_ONSTACK
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, &prev[sigs[i]]);
	}
}

const void* OrtGetApiBase(void) {
	static const void* (*real)(void);
	if (!real) {
		const char* path = getenv("SIGSHIM_ORT");
		void* lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
		if (!lib) return NULL;
		real = (const void* (*)(void))dlsym(lib, "OrtGetApiBase");
		if (!real) return NULL;
	}
	return real();
}
