// Package analytics turns a stream's tracked objects into scene events: line crossings with
// direction, zone entries, exits and loitering, track starts and ends, with per-zone occupancy
// and per-line and per-zone counters. See docs/analytics.md for the rules and figures.
//
// A Config declares zones and lines; Compile validates it into an immutable Set; an Analyzer
// per stream takes each inferred frame's objects (Process) and appends event.Events to the
// caller's slice, without allocating in steady state. Sets are swapped while the stream runs
// (Store) and applied between frames.
//
// # Counting rules
//
//   - Anchor: each zone and line tests one point of the box (bottom-center by default).
//   - Inertia: entering or leaving a zone, and crossing a line, need N consecutive frames on the
//     new side (frames where the track is seen; frames where it is missing do not break a run).
//   - Hysteresis: a line's side changes only once the anchor is more than the margin away from
//     the line, and a crossing counts only when the path goes through the segment itself.
//   - Retention: a track not seen keeps its state for Config.Retention (PTS), so one lost inside
//     a zone and found again does not re-enter; after that (or when the tracker reports it in
//     Frame.Ended, or on Flush) it ends: zone.leave for each zone it was in, then track.end.
//   - Dwell: from the PTS of the first frame of the entering run to that of the first frame of
//     the leaving run, or to the last frame seen for a track that ended.
//
// Event times: every event carries the frame where it was decided (the frame that completes
// an inertia run, or where a track's end is noticed), with the track's last box.
package analytics
