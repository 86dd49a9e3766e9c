// Package frame holds decoded pictures and the bounded pools they come from.
//
// A Frame is reference counted: the stage that takes it from a Pool owns one reference, every
// extra holder calls Retain, every holder calls Release exactly once, and the last Release
// resets the frame's native backing (an FFmpeg AVFrame, a device buffer) and returns it to its
// pool. Pools are bounded: when every frame is in use, Get waits and TryGet fails, which is how
// a slow consumer pushes back on a decoder instead of growing memory.
//
// Why not sync.Pool: the garbage collector empties a sync.Pool at will, so native and device
// memory behind pooled objects would be freed by finalizers at unpredictable times (racing with
// the C side that may still use it) and re-allocated on the hot path; and a sync.Pool has no
// bound and no accounting, so it can neither apply backpressure nor report a leak. Frames here
// are allocated once per pool slot, counted (in use, free, allocated, high-water mark) and freed
// only by Pool.Close.
//
// Debug mode (SetDebug(true), or VINFER_FRAME_DEBUG=1) records where each frame was taken, turns
// a double Release into an error reported by Pool.Close instead of a panic, and makes Close list
// every frame still held, so tests fail on leaks.
package frame
