package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/vinfer/vinfer/track/mot"
)

// trackCmd runs the tracker on a MOTChallenge detection file and prints MOTChallenge result rows.
func trackCmd(args []string) error {
	fs := flag.NewFlagSet("track", flag.ContinueOnError)
	dets := fs.String("detections", "", "detection file (MOTChallenge det.txt: frame,-1,x,y,w,h,score,…; frames 1-based)")
	format := fs.String("format", "mot", "detection file format (mot)")
	fps := fs.Float64("fps", 30, "frame rate of the sequence (frames per second)")
	gt := fs.String("gt", "", "ground truth (MOTChallenge gt.txt): print the scores on stderr")
	box := fs.String("box", "det", "box of each result row: det (the matched detection's) or kalman (the filter's)")
	def := mot.Tracker(30)
	trackThresh := fs.Float64("track-thresh", def.TrackThresh, "score from which a detection is high (first association, new tracks)")
	lowThresh := fs.Float64("low-thresh", 0.1, "score below which a detection is ignored")
	newThresh := fs.Float64("new-track-thresh", def.NewTrackThresh, "least score of a detection that starts a track")
	match := fs.Float64("match-thresh", 0.8, "largest IoU distance (1−IoU) of the first association")
	lowMatch := fs.Float64("low-match-thresh", 0.5, "largest IoU distance of the low-score association")
	unconfirmed := fs.Float64("unconfirmed-match-thresh", def.UnconfirmedMatchThresh, "largest IoU distance to confirm a new track")
	dup := fs.Float64("duplicate-thresh", 0.15, "IoU distance under which a tracked and a lost track are duplicates")
	buffer := fs.Duration("track-buffer", time.Second, "how long a lost track is kept")
	fuse := fs.Bool("fuse-score", false, "multiply IoU by the detection score in the first association")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dets == "" {
		fs.Usage()
		return errors.New("track needs --detections")
	}
	if *format != "mot" {
		return fmt.Errorf("--format %q: only mot is supported", *format)
	}
	if *box != "det" && *box != "kalman" {
		return fmt.Errorf("--box %q: give det or kalman", *box)
	}
	if !(*fps > 0) {
		return fmt.Errorf("--fps %v: give frames per second > 0", *fps)
	}
	if *buffer <= 0 {
		return fmt.Errorf("--track-buffer %v: give a positive duration", *buffer)
	}
	rows, err := mot.ReadFile(*dets)
	if err != nil {
		return err
	}
	tr := mot.Tracker(*fps)
	tr.TrackThresh, tr.LowThresh, tr.NewTrackThresh = *trackThresh, *lowThresh, *newThresh
	tr.MatchThresh, tr.LowMatchThresh, tr.UnconfirmedMatchThresh = *match, *lowMatch, *unconfirmed
	tr.DuplicateThresh, tr.TrackBuffer, tr.FuseScore = *dup, *buffer, *fuse
	if err := tr.Init(); err != nil {
		return err
	}
	res, err := mot.Run(tr, rows, *fps, *box == "kalman")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	var b []byte
	for _, r := range res {
		b = mot.AppendResult(b[:0], r)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if *gt != "" {
		g, err := mot.ReadFile(*gt)
		if err != nil {
			return err
		}
		m, err := mot.Evaluate(g, res)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, m)
	}
	return nil
}
