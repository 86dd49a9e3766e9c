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
	// Handouts counts warm decoders handed to waking streams, Cold those a stream had to
	// wait for being made.
	Handouts, Cold int64
}

// DecoderPools is implemented by an app whose idle streams share decoders.
type DecoderPools interface {
	DecoderPools() DecoderPoolStats
}
