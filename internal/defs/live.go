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
	// ErrLiveReorder: the stream has B-frames, which browsers' WebRTC decoders drop (they
	// expect pictures in presentation order): use the fragmented MP4 view (LiveFMP4): 422.
	ErrLiveReorder = errors.New("the stream has B-frames, which browsers drop over WebRTC: use the fragmented MP4 view (…/mse)")
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
	// With reorder, a stream with B-frames is sent too (a client that reorders), else refused
	// with ErrLiveReorder.
	LiveOffer(ctx context.Context, stream, offer string, reorder bool) (answer, session string, err error)
	// LiveFMP4 joins stream as a viewer of fragmented MP4 (ISO/IEC 14496-12 fragments, for
	// Media Source Extensions); run sends its messages until ctx ends or the viewer is dropped.
	// Errors wrap ErrLiveNotRunning or ErrLiveFull. run must be called (with a done ctx to
	// give the place back).
	LiveFMP4(stream string) (run LiveRun, err error)
	// LiveClose ends a session of stream (ErrLiveSession: none of that stream).
	LiveClose(stream, session string) error
}

// LiveRun sends a viewer's messages with send: text ones are JSON (first {"type":"init",
// "mime":…,"offset":…}, then the stream's results), binary ones the fMP4 init segment, then one
// fragment per access unit. It returns why it stopped.
type LiveRun func(ctx context.Context, send func(text bool, msg []byte) error) error

// LiveStats are the live view's counters (metrics).
type LiveStats struct {
	// Viewers now, over every stream.
	Viewers int
	// Sessions counts the sessions started; Slow the viewers dropped for a full queue;
	// Refused the offers refused for max_viewers.
	Sessions, Slow, Refused int64
}

// LiveStatser reports the live view's figures (metrics).
type LiveStatser interface {
	LiveStats() LiveStats
}
