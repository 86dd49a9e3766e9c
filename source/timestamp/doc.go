// Package timestamp turns the media clocks of live streams into the times vinfer uses:
// Clock maps 32-bit RTP (RFC 3550 §5.1) or MPEG (ISO/IEC 13818-1 §2.4.3.7, 33-bit) ticks to a
// monotonic per-stream presentation time, and Wallclock maps them to capture wall-clock time with
// RTCP sender reports (RFC 3550 §6.4.1).
package timestamp
