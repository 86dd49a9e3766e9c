// Package annexb splits an H.264 Annex-B elementary stream (ITU-T H.264 Annex B) into access
// units, for benchmarks and tests that read raw .h264 files without a container.
package annexb

// nalu returns the NAL units of an Annex-B byte stream with their start codes stripped.
func nalus(b []byte) [][]byte {
	var out [][]byte
	start := -1
	for i := 0; i+2 < len(b); {
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
			if start >= 0 {
				end := i
				for end > start && b[end-1] == 0 { // trailing zero of a 4-byte start code
					end--
				}
				out = append(out, b[start:end])
			}
			i += 3
			start = i
			continue
		}
		i++
	}
	if start >= 0 && start < len(b) {
		out = append(out, b[start:])
	}
	return out
}

// SplitH264 groups the NAL units of an H.264 Annex-B stream into access units (§7.4.1.2.3): a
// new unit starts at an access unit delimiter, at SPS/PPS/SEI or a prefix NAL after the unit's
// first slice, or at a slice whose first_mb_in_slice is 0. Each unit is returned in Annex-B form
// (4-byte start codes), sharing no memory with b. Key reports an IDR slice in the unit.
func SplitH264(b []byte) (units [][]byte, key []bool) {
	var cur []byte
	hasVCL, isKey := false, false
	flush := func() {
		if len(cur) > 0 {
			units = append(units, cur)
			key = append(key, isKey)
		}
		cur, hasVCL, isKey = nil, false, false
	}
	for _, n := range nalus(b) {
		if len(n) == 0 {
			continue
		}
		typ := n[0] & 0x1f
		switch {
		case typ == 9:
			flush()
		case (typ >= 6 && typ <= 8) || (typ >= 14 && typ <= 18):
			if hasVCL {
				flush()
			}
		case typ == 1 || typ == 5:
			if hasVCL && len(n) > 1 && n[1]&0x80 != 0 { // first_mb_in_slice ue(v) == 0
				flush()
			}
			hasVCL = true
			isKey = isKey || typ == 5
		}
		cur = append(cur, 0, 0, 0, 1)
		cur = append(cur, n...)
	}
	flush()
	return units, key
}
