package h26x

import (
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/vinfer/vinfer/media"
)

// StreamInfo describes the stream whose sequence parameter set is sps (without start code):
// picture size after cropping and, when the SPS carries VUI timing, the frame rate. It returns
// an error when the SPS cannot be parsed.
func StreamInfo(codec media.Codec, sps []byte) (media.StreamInfo, error) {
	info := media.StreamInfo{Codec: codec}
	switch codec {
	case media.CodecH264:
		var s h264.SPS
		if err := s.Unmarshal(sps); err != nil {
			return info, err
		}
		info.Width, info.Height, info.FrameRate = s.Width(), s.Height(), s.FPS()
	case media.CodecH265:
		var s h265.SPS
		if err := s.Unmarshal(sps); err != nil {
			return info, err
		}
		info.Width, info.Height, info.FrameRate = s.Width(), s.Height(), s.FPS()
	}
	return info, nil
}
