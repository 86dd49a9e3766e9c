package codec

import (
	"errors"
	"fmt"
	"time"
)

// ErrCorrupt marks a lost access unit or picture: data the decoder rejected, a picture with
// concealed errors, or an access unit before the first key frame. The decoder stays usable;
// callers count a dropped frame and go on.
var ErrCorrupt = errors.New("codec: corrupt data")

// DecodeError describes a lost access unit or picture. It matches ErrCorrupt with errors.Is,
// and FFmpeg's error (an astiav.Error) when there is one.
type DecodeError struct {
	// PTS of the access unit or picture; negative when unknown (an error reported by a decoding
	// thread for an earlier access unit).
	PTS time.Duration
	// Reason says what happened.
	Reason string
	// Err is FFmpeg's error, nil when FFmpeg reported none.
	Err error
}

func (e *DecodeError) Error() string {
	s := "codec: " + e.Reason
	if e.PTS >= 0 {
		s += fmt.Sprintf(" (at %v)", e.PTS)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrCorrupt and FFmpeg's error.
func (e *DecodeError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}
