// Package objects decides which detections of a stream are objects worth tracking and counting,
// and under which kind: class groups (vehicle = car, truck, bus, motorbike), per-class size and
// shape filters, and masks (polygons where detections are ignored).
//
// A stream's Rules compile into a Stage. Stage.Apply runs on each frame's detections right
// after the model's decoder, before the tracker and the analytics: it drops the detections a
// mask or a filter rejects (counted), then runs class-agnostic NMS inside each group, so that
// one vehicle seen as a car and a truck at once stays one detection. The tracker then matches a
// group's detections whatever their class and names each track by a vote over its life
// (package track, Detection.Group).
//
// See docs/models.md ("Groups, filters and masks").
package objects
