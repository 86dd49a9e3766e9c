package mot

import (
	"math"
	"time"

	"github.com/vinfer/vinfer/track"
)

// Run tracks the detection rows dets (frame,-1,x,y,w,h,score; one class) with tr, an initialized
// Tracker, feeding every frame from 1 to the last one, the empty ones included, at presentation
// time (frame−1)/fps. It returns MOTChallenge result rows ordered by frame, each with the matched
// detection's score and box, or with the Kalman filter's box when kalmanBoxes is set.
func Run(tr *track.Tracker, dets []Row, fps float64, kalmanBoxes bool) ([]Row, error) {
	frames := 0
	for _, d := range dets {
		frames = max(frames, d.Frame)
	}
	byFrame := make([][]track.Detection, frames+1)
	for _, d := range dets {
		byFrame[d.Frame] = append(byFrame[d.Frame], track.Detection{
			Box:   [4]float32{float32(d.X), float32(d.Y), float32(d.X + d.W), float32(d.Y + d.H)},
			Score: float32(d.Conf),
		})
	}
	var out []Row
	var tracks []track.Track
	for f := 1; f <= frames; f++ {
		pts := time.Duration(math.Round(float64(f-1) * float64(time.Second) / fps))
		var err error
		tracks, err = tr.Update(pts, byFrame[f], tracks[:0])
		if err != nil {
			return nil, err
		}
		for _, t := range tracks {
			b := t.Box
			if !kalmanBoxes {
				b = byFrame[f][t.Det].Box
			}
			out = append(out, Row{
				Frame: f, ID: t.TrackID,
				X: float64(b[0]), Y: float64(b[1]), W: float64(b[2] - b[0]), H: float64(b[3] - b[1]),
				Conf: float64(t.Score),
			})
		}
	}
	return out, nil
}
