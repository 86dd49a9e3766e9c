// Package live holds what the network sources (source/rtsp, source/rtp, source/gb28181) share:
// their counters (Stats), the hand-off of access units from a receiving goroutine to Read
// (Queue), and the reconnection schedule (Backoff).
package live
