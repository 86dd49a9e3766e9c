package defs

// DecoderPoolStats are the counters of the decoders shared by idle streams (package decpool,
// docs/activity.md "Decoders of idle streams"), summed over the app's pools.
type DecoderPoolStats struct {
	// Probers, Warm and Taken are the decoders alive: shared key-frame decoders, warm ones
	// waiting for a wake, and those streams took from the pools.
	Probers, Warm, Taken int
	// Created and Closed count decoders made and closed.
	Created, Closed int64
	// Probes counts idle key frames decoded on shared decoders, Busy those refused because
	// every shared decoder stayed busy; ProbeNanos is the time spent probing.
	Probes, Busy, ProbeNanos int64
	// ProbeDrains counts probes that drained the decoder to the end of stream and reset it
	// (H.265, H.264 key frames without IDR), ProbePushes those whose picture an H.264 end of
	// sequence pushed out; ProbeSetups counts decoder set-ups during probes (for NVDEC a
	// CUVID decoder and its surfaces made anew).
	ProbeDrains, ProbePushes, ProbeSetups int64
	// Handouts counts warm decoders handed to waking streams, Cold those a stream had to
	// wait for being made.
	Handouts, Cold int64
}

// DecoderPools is implemented by an app whose idle streams share decoders.
type DecoderPools interface {
	DecoderPools() DecoderPoolStats
}
