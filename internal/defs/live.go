package defs

import (
	"context"
	"errors"
)

// Errors of Live, for observers to map to their answers.
var (
	// ErrLiveNotRunning: the stream is not running (unknown, failed, ended or removed): 404.
	ErrLiveNotRunning = errors.New("stream not running")
	// ErrLiveFull: the stream has its max_viewers already: 503.
	ErrLiveFull = errors.New("stream has its most viewers")
	// ErrLiveCodec: the viewer's offer has no codec the stream can be sent in unchanged: 415.
	ErrLiveCodec = errors.New("the browser cannot play the stream's codec")
	// ErrLiveOffer: the offer is not a usable SDP offer: 400.
	ErrLiveOffer = errors.New("bad SDP offer")
	// ErrLiveSession: no live session with that id: 404.
	ErrLiveSession = errors.New("no live session with that id")
)

// Live sends streams' own coded video to viewers over WebRTC (package liveview), the
// signalling WHEP-like (draft-ietf-wish-whep): an SDP offer in, an SDP answer out.
type Live interface {
	// LiveOffer answers a viewer's SDP offer (RFC 8866) for stream with a complete answer (ICE
	// candidates gathered, no trickle) and the session's id. Errors wrap ErrLiveNotRunning,
	// ErrLiveFull, ErrLiveCodec or ErrLiveOffer.
	LiveOffer(ctx context.Context, stream, offer string) (answer, session string, err error)
	// LiveClose ends a session of stream (ErrLiveSession: none of that stream).
	LiveClose(stream, session string) error
}

// LiveStats are the live view's counters (metrics).
type LiveStats struct {
	// Viewers now, over every stream.
	Viewers int
	// Sessions counts the sessions started; Slow the viewers dropped for a full queue;
	// Refused the offers refused for max_viewers.
	Sessions, Slow, Refused int64
}
