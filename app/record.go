package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/record"
	"github.com/vinfer/vinfer/reslog"
	"github.com/vinfer/vinfer/sink"
)

// recording is the record section at work: the video recorder and the results log of the
// streams with record: true. It is a sink (the results log's) closed with the others, after
// the last result.
type recording struct {
	rec      *record.Recorder
	log      *reslog.Log // nil: results: false
	recorded sync.Map    // stream id → true
}

// openRecord starts the recorder of the configuration's record section (nil without one).
func (a *App) openRecord(c *config.Record) error {
	if c == nil {
		return nil
	}
	rc := &recording{}
	rc.rec = &record.Recorder{Dir: c.Dir, Segment: time.Duration(c.Segment), MaxAge: time.Duration(c.MaxAge),
		MaxBytesPerStream: int64(c.MaxBytesPerStream), MaxBytes: int64(c.MaxBytes), MinFree: int64(c.MinFree),
		Buffer: int(c.Buffer), Log: a.Log.With("module", "record")}
	if c.Results == nil || *c.Results {
		rc.log = &reslog.Log{Dir: c.Dir + string(os.PathSeparator) + "results", KeepFrom: rc.rec.Oldest,
			MaxAge: time.Duration(c.MaxAge), Log: a.Log.With("module", "reslog"),
			Streams: func(id string) bool { _, ok := rc.recorded.Load(id); return ok }}
		rc.rec.OnSegment = func(string) { rc.log.Retain() }
	}
	if err := rc.rec.Init(); err != nil {
		return err
	}
	if rc.log != nil {
		if err := rc.log.Init(); err != nil {
			rc.rec.Close()
			return err
		}
	}
	a.rec = rc
	return nil
}

// recordStream makes sc record its stream when s asks for it: the recorder beside evidence's
// ring sees the access units. It returns the recorder's observer (nil: not recorded), to end
// if the stream does not start.
func (a *App) recordStream(sc *pipeline.StreamConfig, s *config.Stream) pipeline.AUObserver {
	if a.rec == nil || !s.Record {
		return nil
	}
	a.rec.recorded.Store(s.ID, true)
	o := a.rec.rec.Observer(s.ID)
	if sc.AUObserver == nil {
		sc.AUObserver = o
	} else {
		sc.AUObserver = auTee{sc.AUObserver, o}
	}
	return o
}

// auTee hands each access unit to two observers.
type auTee [2]pipeline.AUObserver

func (t auTee) ObserveAccessUnit(au *media.AccessUnit) {
	t[0].ObserveAccessUnit(au)
	t[1].ObserveAccessUnit(au)
}

func (t auTee) EndOfStream() {
	t[0].EndOfStream()
	t[1].EndOfStream()
}

// Write logs a result of a recorded stream (sink.Sink).
func (rc *recording) Write(r *sink.Result) error {
	if rc.log == nil {
		return nil
	}
	return rc.log.Write(r)
}

// Close ends the recordings and the results log.
func (rc *recording) Close() error {
	err := rc.rec.Close()
	if rc.log != nil {
		err = errors.Join(err, rc.log.Close())
	}
	return err
}

// Recordings returns the recordings' listing, nil when nothing is recorded.
func (a *App) Recordings() defs.Recordings {
	if a.rec == nil {
		return nil
	}
	return a.rec
}

// known answers ErrNotRecorded for a stream never recorded here (an unknown id: 404).
func (rc *recording) known(stream string) error {
	if _, ok := rc.recorded.Load(stream); ok || rc.rec.Known(stream) {
		return nil
	}
	return fmt.Errorf("%w: stream %q has no recording here", defs.ErrNotRecorded, stream)
}

func (rc *recording) RecordingSegments(stream string, from, to time.Time) ([]defs.RecordedSegment, error) {
	if err := rc.known(stream); err != nil {
		return nil, err
	}
	segs, err := rc.rec.Segments(stream, from, to)
	if err != nil {
		return nil, recErr(err)
	}
	out := make([]defs.RecordedSegment, len(segs))
	for i, s := range segs {
		out[i] = defs.RecordedSegment{Name: s.Name, Start: s.Start.UTC(), End: s.End.UTC(), Bytes: s.Size, Open: s.Open}
		if s.HasZero {
			z := s.Zero.Seconds()
			out[i].ZeroPTS = &z
		}
	}
	return out, nil
}

func (rc *recording) RecordingFile(stream, name string) (*os.File, error) {
	f, err := rc.rec.Open(stream, name)
	return f, recErr(err)
}

func (rc *recording) RecordingExport(w io.Writer, stream string, from, to time.Time) error {
	if err := rc.known(stream); err != nil {
		return err
	}
	return recErr(rc.rec.Export(w, stream, from, to))
}

func (rc *recording) ResultsExport(w io.Writer, stream string, from, to time.Time, format string) error {
	if rc.log == nil {
		return fmt.Errorf("%w: the results log is off (record: results: false)", defs.ErrNotRecorded)
	}
	if err := rc.known(stream); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	var b []byte
	err := rc.log.Query(stream, from, to, func(f *reslog.Frame) error {
		if format == "mot" {
			b = reslog.AppendMOT(b[:0], f)
		} else {
			b = reslog.AppendJSON(b[:0], f)
		}
		_, err := bw.Write(b)
		return err
	})
	if err != nil {
		return recErr(err)
	}
	return bw.Flush()
}

// recErr maps the packages' errors to defs'.
func recErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, record.ErrNoStream), errors.Is(err, reslog.ErrNoStream):
		return fmt.Errorf("%w: %v", defs.ErrNotRecorded, err)
	case errors.Is(err, record.ErrNoSegment), errors.Is(err, record.ErrNothing):
		return fmt.Errorf("%w: %v", defs.ErrNoRecording, err)
	case errors.Is(err, record.ErrTooLong):
		return fmt.Errorf("%w: at most %v", defs.ErrRangeTooLong, record.MaxExport)
	}
	return err
}

// RecordingStats returns the recording's figures (defs.RecordingStatser).
func (a *App) RecordingStats() (defs.RecordingStats, bool) {
	if a.rec == nil {
		return defs.RecordingStats{}, false
	}
	r := a.rec.rec.Stats()
	s := defs.RecordingStats{Segments: r.Segments, Fragments: r.Fragments, Bytes: r.Bytes, DroppedGOPs: r.Dropped,
		Repaired: r.Repaired, RemovedTorn: r.Removed, Retained: r.Retained}
	if a.rec.log != nil {
		l := a.rec.log.Stats()
		s.ResultFrames, s.ResultBytes, s.ResultsDropped, s.ResultsTorn = l.Frames, l.Bytes, l.Dropped, l.Torn
	}
	return s, true
}
