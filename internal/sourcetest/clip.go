package sourcetest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// Sample is one coded picture of a clip as stored in the container.
type Sample struct {
	// NALUs without start codes, as in the file (MP4 samples carry no parameter sets).
	NALUs [][]byte
	// PTS and DTS in 90 kHz ticks, rescaled from the container time base.
	PTS, DTS int64
	// Key is the container's sync-sample flag.
	Key bool
}

// Clip is a video file read as reference: its parameter sets and every sample in decoding order.
type Clip struct {
	Path      string
	Codec     media.Codec
	ParamSets [][]byte // VPS (H.265), SPS, PPS in that order, without start codes
	Samples   []Sample
}

var (
	clipsMu sync.Mutex
	clips   = map[string]*Clip{}
)

// LoadClip reads assets/<rel> with ffprobe and ffmpeg (the samples are copied, not re-encoded).
// Results are cached per test binary.
func LoadClip(t testing.TB, rel string) *Clip {
	t.Helper()
	path := Asset(t, rel)
	clipsMu.Lock()
	defer clipsMu.Unlock()
	if c := clips[path]; c != nil {
		return c
	}
	ffmpeg, ffprobe := Tool(t, "ffmpeg"), Tool(t, "ffprobe")
	c, err := loadClip(ffmpeg, ffprobe, path, t.TempDir())
	if err != nil {
		t.Fatalf("sourcetest: reading %s: %v", rel, err)
	}
	clips[path] = c
	return c
}

func loadClip(ffmpeg, ffprobe, path, tmp string) (*Clip, error) {
	out, err := exec.Command(ffprobe, "-v", "error", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,time_base", "-of", "default=nw=1", path).Output()
	if err != nil {
		return nil, fmt.Errorf("ffprobe stream: %w", err)
	}
	kv := parseKV(string(out))
	c := &Clip{Path: path}
	bsf := ""
	switch kv["codec_name"] {
	case "h264":
		c.Codec, bsf = media.CodecH264, "h264_mp4toannexb"
	case "hevc":
		c.Codec, bsf = media.CodecH265, "hevc_mp4toannexb"
	default:
		return nil, fmt.Errorf("codec %q", kv["codec_name"])
	}
	var num, den int64
	if _, err := fmt.Sscanf(kv["time_base"], "%d/%d", &num, &den); err != nil {
		return nil, fmt.Errorf("time base %q: %w", kv["time_base"], err)
	}

	// parameter sets: the first access unit in Annex-B carries them
	first := filepath.Join(tmp, "first.annexb")
	if err := exec.Command(ffmpeg, "-v", "error", "-y", "-i", path, "-map", "0:v:0", "-c", "copy",
		"-bsf:v", bsf, "-frames:v", "1", "-f", map[media.Codec]string{media.CodecH264: "h264", media.CodecH265: "hevc"}[c.Codec], first).Run(); err != nil {
		return nil, fmt.Errorf("ffmpeg first access unit: %w", err)
	}
	b, err := os.ReadFile(first)
	if err != nil {
		return nil, err
	}
	for len(b) > 0 {
		var n []byte
		n, b = h26x.NextNALU(b)
		switch h26x.Classify(c.Codec, n) {
		case h26x.KindVPS, h26x.KindSPS, h26x.KindPPS:
			c.ParamSets = append(c.ParamSets, n)
		}
	}

	// samples: raw payloads back to back, split by the sizes ffprobe reports
	data := filepath.Join(tmp, "samples.data")
	if err := exec.Command(ffmpeg, "-v", "error", "-y", "-i", path, "-map", "0:v:0", "-c", "copy", "-f", "data", data).Run(); err != nil {
		return nil, fmt.Errorf("ffmpeg data: %w", err)
	}
	payload, err := os.ReadFile(data)
	if err != nil {
		return nil, err
	}
	out, err = exec.Command(ffprobe, "-v", "error", "-select_streams", "v:0",
		"-show_entries", "packet=pts,dts,size,flags", "-of", "compact=p=0", path).Output()
	if err != nil {
		return nil, fmt.Errorf("ffprobe packets: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		kv := parseKV(strings.ReplaceAll(sc.Text(), "|", "\n"))
		size, err := strconv.Atoi(kv["size"])
		if err != nil || size > len(payload) {
			return nil, fmt.Errorf("packet size %q of %d bytes left", kv["size"], len(payload))
		}
		s := Sample{Key: strings.HasPrefix(kv["flags"], "K")}
		pts, _ := strconv.ParseInt(kv["pts"], 10, 64)
		dts, _ := strconv.ParseInt(kv["dts"], 10, 64)
		s.PTS, s.DTS = pts*num*90000/den, dts*num*90000/den
		for p := payload[:size]; len(p) > 0; {
			if len(p) < 4 {
				return nil, fmt.Errorf("truncated length prefix")
			}
			n := int(binary.BigEndian.Uint32(p))
			if n > len(p)-4 {
				return nil, fmt.Errorf("NAL unit of %d bytes in %d", n, len(p)-4)
			}
			s.NALUs = append(s.NALUs, p[4:4+n])
			p = p[4+n:]
		}
		payload = payload[size:]
		c.Samples = append(c.Samples, s)
	}
	if len(payload) != 0 || len(c.Samples) == 0 {
		return nil, fmt.Errorf("%d samples, %d bytes unaccounted", len(c.Samples), len(payload))
	}
	return c, nil
}

func parseKV(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m
}

// AnnexB returns the access unit vinfer's sources deliver for sample i: its NAL units with
// 4-byte start codes and, for a key frame without in-band parameter sets, the clip's parameter
// sets inserted right before the first VCL NAL unit.
func (c *Clip) AnnexB(i int) []byte {
	s := c.Samples[i]
	inband := false
	for _, n := range s.NALUs {
		if k := h26x.Classify(c.Codec, n); k == h26x.KindSPS {
			inband = true
		}
	}
	var b []byte
	inserted := inband || !s.Key
	for _, n := range s.NALUs {
		k := h26x.Classify(c.Codec, n)
		if !inserted && (k == h26x.KindKey || k == h26x.KindVCL) {
			for _, ps := range c.ParamSets {
				b = append(b, 0, 0, 0, 1)
				b = append(b, ps...)
			}
			inserted = true
		}
		b = append(b, 0, 0, 0, 1)
		b = append(b, n...)
	}
	return b
}

// WithParamSets returns the NAL units of sample i with the parameter sets in-band (before the
// first VCL NAL unit of a key frame), as a camera that repeats them sends it.
func (c *Clip) WithParamSets(i int) [][]byte {
	var out [][]byte
	for b := c.AnnexB(i); len(b) > 0; {
		var n []byte
		n, b = h26x.NextNALU(b)
		out = append(out, n)
	}
	return out
}
