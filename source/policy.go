package source

import "time"

// Policy is what a stream declaration may reach when its source is opened.
type Policy struct {
	// Roots, when not nil, are the directories (absolute, symlinks resolved or not) that files
	// a source names (file paths, rtp's sdp= file) must lie in once symlinks are resolved.
	// nil allows any path: a declaration from the configuration file is trusted.
	Roots []string
	// OpenTimeout bounds opening the source: probing a file, a network handshake
	// (0: DefaultOpenTimeout).
	OpenTimeout time.Duration
}

// DefaultOpenTimeout bounds opening a source when the policy sets no timeout.
const DefaultOpenTimeout = 10 * time.Second

// Timeout is p.OpenTimeout or DefaultOpenTimeout.
func (p Policy) Timeout() time.Duration {
	if p.OpenTimeout <= 0 {
		return DefaultOpenTimeout
	}
	return p.OpenTimeout
}
