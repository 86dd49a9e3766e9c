package file

import (
	"errors"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/source"
)

// ErrTimeout is wrapped when opening or probing a file takes longer than OpenTimeout.
var ErrTimeout = errors.New("timed out")

// Formats are the demuxers a file may be opened with: containers that hold one video file.
// Playlists and lists of files (HLS, concat, image sequences) are left out: they would open
// further files or URLs named inside the file.
const Formats = "mov,matroska,mpegts,mpeg,h264,hevc,flv,avi,asf"

// openOptions are avformat_open_input's options: the file protocol only, the demuxers of
// Formats only. The caller frees the dictionary.
func openOptions() *astiav.Dictionary {
	d := astiav.NewDictionary()
	_ = d.Set("protocol_whitelist", "file", 0)
	_ = d.Set("format_whitelist", Formats, 0)
	return d
}

// deadline arms the format context's interrupt callback to fire after OpenTimeout; the
// returned function disarms it (call it once the file is open and probed).
func (s *Source) deadline() func() {
	s.interrupt = s.fc.SetInterruptCallback()
	d := s.OpenTimeout
	if d <= 0 {
		d = source.DefaultOpenTimeout
	}
	t := time.AfterFunc(d, func() {
		s.timedOut.Store(true)
		s.interrupt.Interrupt()
	})
	return func() { t.Stop() }
}

// testHookOpen, set by tests, runs between arming the deadline and opening the file.
var testHookOpen func(*Source)
