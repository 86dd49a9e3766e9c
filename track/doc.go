// Package track follows detected objects from frame to frame and gives each one an identity that
// stays stable for its life: a multi-object tracker of the ByteTrack family (Zhang et al.,
// "ByteTrack: Multi-Object Tracking by Associating Every Detection Box", ECCV 2022).
//
// Each Update predicts every track with a constant-velocity Kalman filter, matches the
// high-score detections to the tracks by IoU (optimal assignment with a cost limit, package lap),
// then the remaining tracks to the low-score detections, then the tracks born in the previous
// frame (unconfirmed) to what is left; unmatched high-score detections start new tracks, tracks
// without a detection are kept as lost for TrackBuffer and can be found again, and a lost track
// that overlaps a tracked one is dropped as a duplicate. Matching is class-aware.
//
// Time comes from presentation timestamps: the Kalman step is the time since the previous Update
// in nominal frame periods (1/FrameRate), so skipped, dropped or irregular frames do not break
// motion prediction, and at the nominal rate the tracker computes what the frame-based original
// computes.
package track
