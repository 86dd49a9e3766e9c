#!/usr/bin/env python3
"""Which native library installs signal handlers, and with which flags (issue 29, item 2).

Runs ON THE GPU MACHINE. Loads, one step at a time, what `vinfer run` with nvdec streams and the
CUDA execution provider loads (the CUDA driver, NVDEC, ONNX Runtime's core and its CUDA EP plugin
with a session run once), and after each step lists every signal whose handler changed: the
handler's library (dladdr), its flags and whether SA_ONSTACK is set. Go aborts with "non-Go code
set up signal handler without SA_ONSTACK flag" when a signal arrives on a Go thread and the
handler found there lacks SA_ONSTACK.

usage: sigscan.py MODEL.onnx   (LD_LIBRARY_PATH and VINFER_ORT_LIB as scripts/gpu/env.sh sets them)
"""
import ctypes
import ctypes.util
import os
import sys

SA_SIGINFO, SA_ONSTACK, SA_RESTART, SA_NODEFER, SA_RESETHAND = 0x4, 0x08000000, 0x10000000, 0x40000000, 0x80000000


class Sigaction(ctypes.Structure):  # glibc x86-64 struct sigaction
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None, use_errno=True)
libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libdl = ctypes.CDLL(ctypes.util.find_library("dl") or None)
libdl.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]


def snapshot():
    out = {}
    for sig in range(1, 65):
        sa = Sigaction()
        if libc.sigaction(sig, None, ctypes.byref(sa)) != 0:
            continue
        out[sig] = (sa.handler or 0, sa.flags)
    return out


def where(addr):
    if addr in (0, 1):
        return "SIG_DFL" if addr == 0 else "SIG_IGN"
    info = DlInfo()
    if libdl.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) and info.fname:
        return "%s(%s)" % (os.path.basename(info.fname.decode()), (info.sname or b"?").decode())
    return hex(addr)


def step(name, before):
    now = snapshot()
    changed = [s for s in now if now[s] != before.get(s, (0, 0))]
    print("== %s: %d handler(s) changed" % (name, len(changed)))
    for s in changed:
        h, f = now[s]
        print("  sig %2d %-10s handler %-50s flags %#010x SA_ONSTACK=%s" % (
            s, _signame(s), where(h), f & 0xFFFFFFFF, "yes" if f & SA_ONSTACK else "NO"))
    return now


def _signame(s):
    import signal
    try:
        return signal.Signals(s).name
    except ValueError:
        return "SIGRT%d" % (s - 34) if s >= 34 else str(s)


def main():
    model = sys.argv[1]
    snap = step("start (python)", {})
    cuda = ctypes.CDLL("libcuda.so.1")
    if cuda.cuInit(0) != 0:
        print("cuInit failed")
    ctx = ctypes.c_void_p()
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    snap = step("libcuda cuInit + primary context", snap)
    ctypes.CDLL("libnvcuvid.so.1")
    snap = step("libnvcuvid loaded", snap)
    import onnxruntime as ort
    snap = step("onnxruntime imported", snap)
    ort.register_execution_provider_library("cuda", "/opt/vinfer-gpu/libonnxruntime_providers_cuda.so")
    snap = step("CUDA EP plugin registered", snap)
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "CUDAExecutionProvider"]
    so = ort.SessionOptions()
    so.add_provider_for_devices(devs, {})
    sess = ort.InferenceSession(model, sess_options=so)
    snap = step("CUDA EP session created", snap)
    import numpy as np
    i = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in i.shape]
    sess.run(None, {i.name: np.zeros(shape, np.float32)})
    step("session run once", snap)


if __name__ == "__main__":
    main()
