package rtp

import (
	"errors"
	"fmt"

	"github.com/vinfer/vinfer/source"
)

// MaxSDPFile bounds an SDP file (a session description is a few hundred bytes).
const MaxSDPFile = 64 << 10

// ErrSDPFile is wrapped when an sdp= file is not a session description with usable video.
var ErrSDPFile = errors.New("not a session description (RFC 8866) with H.264 or H.265 video")

// readSDP reads the sdp= file under roots. Its errors name the file, never quote its contents
// (the parser's messages do, so they are dropped): a mistyped path must not show what another
// file holds.
func readSDP(path string, roots []string) (st Stream, warn, err error) {
	b, err := source.ReadFile(path, roots, MaxSDPFile)
	if err != nil {
		return Stream{}, nil, fmt.Errorf("rtp: sdp %w", err)
	}
	st, warn, err = ParseSDP(b)
	if err != nil {
		return Stream{}, nil, fmt.Errorf("rtp: sdp file %s: %w", path, ErrSDPFile)
	}
	return st, warn, nil
}
