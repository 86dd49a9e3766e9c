package main

import "github.com/asticode/go-astiav"

// quietFFmpeg keeps FFmpeg's own logging (concealment notices, probe warnings) off stderr
// unless --log-level debug: vinfer reports decode errors itself, counted per stream.
func quietFFmpeg(debug bool) {
	if debug {
		astiav.SetLogLevel(astiav.LogLevelWarning)
		return
	}
	astiav.SetLogLevel(astiav.LogLevelQuiet)
}
