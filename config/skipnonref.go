package config

import "errors"

// checkSkipNonRef: skip_nonref only where frames are skipped anyway, on the FFmpeg decoder.
func (s *Stream) checkSkipNonRef() error {
	if !s.SkipNonRef {
		return nil
	}
	if s.Interval <= 1 && s.MaxFPS == 0 {
		return errors.New("skip_nonref needs interval > 1 or max_fps (it spares the decoding of frames they skip)")
	}
	if s.OnGPU() {
		return errors.New("skip_nonref: FFmpeg decoder only (decoder: cpu)")
	}
	return nil
}
