//go:build vinfer_static

package codec

// Static FFmpeg build (see scripts/build-ffmpeg-static.sh and scripts/pkg-config-static): the
// minimal FFmpeg archives load the NVIDIA driver libraries with dlopen (ffnvcodec).

// #cgo LDFLAGS: -ldl -lpthread -lm
import "C"
