// Package brokered is what every broker sink (MQTT, Kafka, NATS, webhook) shares: the common
// settings, a durable outbox per sink and its deliver.Worker, the Write that turns a result's
// events and sampled detections into outbox records, Close and Stats. A broker package adds
// only its client, as a deliver.Publisher that reads records with Decode.
//
// # Records
//
// Every outbox record is a small binary header followed by the message body, the JSON a broker
// receives as is:
//
//	byte 0        format version, 1
//	byte 1        kind: 'e' (an event), 'd' (a frame's detections), 'c' (a zone's or line's counts)
//	              or 'r' (a retained message: MQTT's Home Assistant discovery)
//	bytes 2–17    key: the event's id (a ULID, 16 bytes); detection and count records get a fresh ULID
//	byte 18       n, the length of the stream id (1–255)
//	19…19+n       stream id
//	next byte     m, the length of the type
//	next m bytes  type: the event type ("zone.enter", "line.cross", …), "detections", or for a count
//	              record the zone's or line's name; for a retained message its whole topic
//	rest          body: event.Event.AppendJSON or sink.AppendJSON
//
// Publishers route on stream and type and deduplicate on the key (JetStream's Nats-Msg-Id,
// Kafka and webhook headers) without parsing the JSON.
package brokered
