package track

// Detection is one detected object, an input of Tracker.Update.
type Detection struct {
	// Box is [x1,y1,x2,y2] in pixels (x right, y down, x1 < x2, y1 < y2).
	Box [4]float32
	// Score is the detection confidence, 0…1.
	Score float32
	// ClassID is the class index; a track only matches detections of its own class, unless
	// Group is set.
	ClassID int
	// Group, when above 0, puts the detection in a group of classes (package objects): it
	// matches the tracks of its group whatever their class, and a grouped track's class is the
	// one its detections voted for, weighted by score, over its life. 0: the class alone.
	Group int
}

// Track is one tracked object in the output of Tracker.Update: an object matched to a detection
// in this frame.
type Track struct {
	// TrackID identifies the object for its life in the Tracker: 1, 2, … in order of creation.
	TrackID int64
	// Box is the Kalman filter's box [x1,y1,x2,y2] in pixels after this frame's detection (what
	// ByteTrack outputs; the detection's own box is dets[Det].Box).
	Box [4]float32
	// Score is the score of this frame's detection.
	Score float32
	// ClassID is the class of the track: that of its detections, or for a grouped track the
	// class with the most score summed over its detections so far.
	ClassID int
	// Det is the index in Update's dets of this frame's detection.
	Det int
}
