package app

import (
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/kafka"
	"github.com/vinfer/vinfer/sink/mqtt"
	"github.com/vinfer/vinfer/sink/nats"
	"github.com/vinfer/vinfer/sink/webhook"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/file"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/onvif"
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
	source.Register(onvif.Kind)   // onvif://user:pass@host[:port]/profile

	sink.Register(sink.JSONLKind) // output.jsonl, {type: jsonl}
	sink.Register(mqtt.Kind)      // {type: mqtt}: MQTT 3.1.1 and 5
	sink.Register(kafka.Kind)     // {type: kafka}
	sink.Register(nats.Kind)      // {type: nats}: NATS and JetStream
	sink.Register(webhook.Kind)   // {type: webhook}
}
