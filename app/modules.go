package app

import (
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/file"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/rtsp"
)

// The module table: every kind of source and sink vinfer ships, one line each. A new kind is
// its own package plus one line here.
func init() {
	source.Register(file.Kind)    // paths, file://
	source.Register(rtsp.Kind)    // rtsp://, rtsps://
	source.Register(rtp.Kind)     // rtp://
	source.Register(gb28181.Kind) // gb28181://

	sink.Register(sink.JSONLKind) // output.jsonl, {type: jsonl}
}
