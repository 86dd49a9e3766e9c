// Package onvifmeta serves each analysed stream over RTSP as its own coded video (no
// re-encode) plus an ONVIF metadata track (ONVIF Profile M): per inferred frame one
// tt:MetadataStream document with the frame's tracked objects (tt:Object ObjectId = track id,
// tt:BoundingBox in ONVIF's default normalised coordinates, tt:Class/tt:Type with its
// likelihood) and its zone and line events as tt:Event notifications
// (tns1:RuleEngine/LineDetector/Crossed, tns1:RuleEngine/FieldDetector/ObjectsInside).
//
// The metadata track is `m=application … a=rtpmap:<pt> vnd.onvif.metadata/90000`, its RTP
// payload the XML document split across packets with the marker on the last (ONVIF Streaming
// Specification §5.2.1.1). Both tracks share the stream's clock: RTP timestamps are 90 kHz
// from the same presentation time and the RTCP sender reports map them to the same wall clock,
// so a VMS aligns boxes with the frames they were found on.
package onvifmeta
