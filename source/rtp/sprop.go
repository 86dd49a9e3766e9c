package rtp

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// ErrSprop reports sprop entries that were skipped (not base64, or not a parameter set).
var ErrSprop = errors.New("bad sprop parameter set entries skipped")

// spropKeys are the fmtp parameters that carry parameter sets: sprop-parameter-sets (H.264,
// RFC 6184 §8.1), sprop-vps, sprop-sps and sprop-pps (H.265, RFC 7798 §7.1).
var spropKeys = []string{"sprop-parameter-sets", "sprop-vps", "sprop-sps", "sprop-pps"}

// fmtpLine matches an SDP fmtp attribute: payload type and parameters.
var fmtpLine = regexp.MustCompile(`(?m)^a=fmtp:(\d+)[ \t]+([^\r\n]*)`)

// SpropParamSets returns the parameter sets of payload type pt in a raw SDP document, read
// tolerantly: every sprop parameter of the fmtp line, entries in any count and order, with or
// without base64 padding or an Annex-B start code; entries that are not base64 or not a
// VPS/SPS/PPS of codec are skipped and reported in err (wrapping ErrSprop), the good ones are
// returned all the same.
func SpropParamSets(sdp []byte, pt uint8, codec media.Codec) (sets [][]byte, err error) {
	var bad []string
	for _, m := range fmtpLine.FindAllSubmatch(sdp, -1) {
		if string(m[1]) != fmt.Sprint(pt) {
			continue
		}
		for _, kv := range strings.Split(string(m[2]), ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			if !isSpropKey(strings.ToLower(strings.TrimSpace(k))) {
				continue
			}
			for _, e := range strings.Split(v, ",") {
				e = strings.TrimSpace(e)
				if e == "" {
					continue
				}
				n, ok := decodeSprop(e, codec)
				if !ok {
					bad = append(bad, e)
					continue
				}
				sets = append(sets, n)
			}
		}
	}
	if len(bad) > 0 {
		err = fmt.Errorf("%w: %q", ErrSprop, bad)
	}
	return sets, err
}

func isSpropKey(k string) bool {
	for _, s := range spropKeys {
		if k == s {
			return true
		}
	}
	return false
}

// decodeSprop decodes one base64 entry into a parameter set of codec.
func decodeSprop(e string, codec media.Codec) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(e)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(e, "=")); err != nil {
			return nil, false
		}
	}
	b = bytes.TrimPrefix(b, []byte{0, 0, 0, 1})
	b = bytes.TrimPrefix(b, []byte{0, 0, 1})
	switch h26x.Classify(codec, b) {
	case h26x.KindVPS, h26x.KindSPS, h26x.KindPPS:
		if len(b) >= 2 {
			return b, true
		}
	}
	return nil, false
}

// StripSprop returns sdp without the sprop parameters of its fmtp lines, for SDP parsers that
// reject a session whose parameter sets do not decode: the stream is still playable with the
// parameter sets in-band (or those SpropParamSets salvages).
func StripSprop(sdp []byte) []byte {
	return fmtpLine.ReplaceAllFunc(sdp, func(line []byte) []byte {
		m := fmtpLine.FindSubmatch(line)
		var keep []string
		for _, kv := range strings.Split(string(m[2]), ";") {
			k, _, _ := strings.Cut(strings.TrimSpace(kv), "=")
			if strings.TrimSpace(kv) == "" || isSpropKey(strings.ToLower(strings.TrimSpace(k))) {
				continue
			}
			keep = append(keep, strings.TrimSpace(kv))
		}
		if len(keep) == 0 { // an fmtp line without parameters: leave an unknown attribute
			return []byte(fmt.Sprintf("a=x-vinfer-fmtp:%s", m[1]))
		}
		return []byte(fmt.Sprintf("a=fmtp:%s %s", m[1], strings.Join(keep, ";")))
	})
}
