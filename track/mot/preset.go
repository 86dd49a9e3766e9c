package mot

import "github.com/vinfer/vinfer/track"

// Tracker returns a tracker configured for MOTChallenge detection files of Faster R-CNN-class
// detectors at frame rate fps (the defaults of vinfer track; docs/tracking.md explains them):
// ByteTrack's structure and gates with the score thresholds moved up, since such detectors give
// true positives scores near 1 and the files are already cut at a low score, and a stricter
// confirmation of new tracks. Call Init on it.
func Tracker(fps float64) *track.Tracker {
	return &track.Tracker{
		TrackThresh:            0.75,
		NewTrackThresh:         0.9,
		UnconfirmedMatchThresh: 0.6,
		FrameRate:              fps,
	}
}
