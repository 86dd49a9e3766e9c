package api

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// maxRanges bounds the byte ranges one request may ask of an evidence file. RFC 9110 §14.2 lets
// a server refuse many small or overlapping ranges: each part of a multipart/byteranges answer
// carries its own headers, so 5,000 one-byte ranges made a clip's answer 14 times its size.
const maxRanges = 4

// rangesOK reports whether the Range header h asks for at most maxRanges ranges of a size-byte
// file, none overlapping another: what such ranges send is bounded by the file's size plus a
// few part headers. A header that is not "bytes=" ranges of digits is left to
// http.ServeContent, which answers it (416, or the whole file).
func rangesOK(h string, size int64) bool {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return true
	}
	var rs [][2]int64 // [first, last] byte
	n := 0
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n++; n > maxRanges {
			return false
		}
		a, b, ok := strings.Cut(part, "-")
		if !ok {
			return true
		}
		var first, last int64
		switch {
		case a == "": // the last b bytes
			k, err := strconv.ParseInt(b, 10, 64)
			if err != nil {
				return true
			}
			first, last = max(size-k, 0), size-1
		default:
			f, err := strconv.ParseInt(a, 10, 64)
			if err != nil {
				return true
			}
			first, last = f, size-1
			if b != "" {
				l, err := strconv.ParseInt(b, 10, 64)
				if err != nil {
					return true
				}
				last = min(l, size-1)
			}
		}
		if first <= last && first < size {
			rs = append(rs, [2]int64{first, last})
		}
	}
	slices.SortFunc(rs, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	for i := 1; i < len(rs); i++ {
		if rs[i][0] <= rs[i-1][1] {
			return false
		}
	}
	return true
}
