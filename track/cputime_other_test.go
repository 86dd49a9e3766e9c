//go:build !linux

package track

import "time"

func threadCPU() time.Duration { return 0 }
