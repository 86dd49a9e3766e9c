package send

import (
	"errors"
	"syscall"
)

// isRefused reports a connected UDP socket's report of an earlier datagram that found no
// listener (ICMP port unreachable).
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
