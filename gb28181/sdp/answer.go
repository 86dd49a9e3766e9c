package sdp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxAnswerSize bounds an answer (a camera's is a few hundred bytes).
const MaxAnswerSize = 8 << 10

// Answer errors.
var (
	ErrAnswerSize = errors.New("sdp: answer too large")
	ErrSyntax     = errors.New("sdp: malformed answer")
	ErrNoVideo    = errors.New("sdp: answer has no video media")
	ErrAddress    = errors.New("sdp: answer has no usable connection address")
)

// Answer is what vinfer needs of a device's answer (GB/T 28181-2016 §9.2.2).
type Answer struct {
	// IP and Port are where the device sends from or, for TCP with a=setup:passive in the
	// answer, where it listens (vinfer connects there in TransportTCPActive).
	IP   netip.Addr
	Port int
	// TCP reports a TCP/RTP/AVP media line; Setup is its a=setup value.
	TCP   bool
	Setup string
	// SSRC is the y= value the device will send with (devices may differ from the offer); 0
	// when absent.
	SSRC uint32
	// HasSSRC reports a y= line.
	HasSSRC bool
	// PayloadTypes maps rtpmap payload types to encoding names (96 → "PS").
	PayloadTypes map[uint8]string
}

// ParseAnswer reads an answer. Unknown lines are ignored; the first video media line counts.
func ParseAnswer(b []byte) (*Answer, error) {
	if len(b) > MaxAnswerSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrAnswerSize, len(b))
	}
	a := &Answer{PayloadTypes: map[uint8]string{}}
	var sessionIP, mediaIP string
	inVideo, seenVideo, seenV := false, false, false
	for n, line := range bytes.Split(b, []byte("\n")) {
		l := strings.TrimRight(string(line), "\r ")
		if l == "" {
			continue
		}
		if len(l) < 2 || l[1] != '=' {
			return nil, fmt.Errorf("%w: line %d is not type=value", ErrSyntax, n+1)
		}
		v := l[2:]
		switch l[0] {
		case 'v':
			seenV = true
		case 'c':
			f := strings.Fields(v)
			if len(f) != 3 || f[0] != "IN" {
				return nil, fmt.Errorf("%w: c=%.40q", ErrSyntax, v)
			}
			ip, _, _ := strings.Cut(f[2], "/")
			if inVideo {
				mediaIP = ip
			} else if !seenVideo {
				sessionIP = ip
			}
		case 'm':
			if seenVideo {
				inVideo = false
				continue
			}
			f := strings.Fields(v)
			if len(f) < 3 || f[0] != "video" {
				inVideo = false
				continue
			}
			port, err := strconv.Atoi(strings.SplitN(f[1], "/", 2)[0])
			if err != nil || port < 0 || port > 65535 {
				return nil, fmt.Errorf("%w: m= port %.16q", ErrSyntax, f[1])
			}
			a.Port, a.TCP = port, strings.HasPrefix(strings.ToUpper(f[2]), "TCP/")
			inVideo, seenVideo = true, true
		case 'a':
			if !inVideo {
				continue
			}
			switch name, val, _ := strings.Cut(v, ":"); name {
			case "setup":
				a.Setup = strings.TrimSpace(val)
			case "rtpmap":
				pt, enc, ok := strings.Cut(val, " ")
				n, err := strconv.ParseUint(pt, 10, 7)
				if ok && err == nil && len(a.PayloadTypes) < 32 {
					name, _, _ := strings.Cut(enc, "/")
					a.PayloadTypes[uint8(n)] = name
				}
			}
		case 'y':
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: y=%.16q is not a decimal SSRC", ErrSyntax, v)
			}
			a.SSRC, a.HasSSRC = uint32(n), true
		}
	}
	if !seenV {
		return nil, fmt.Errorf("%w: no v= line", ErrSyntax)
	}
	if !seenVideo {
		return nil, ErrNoVideo
	}
	ip := mediaIP
	if ip == "" {
		ip = sessionIP
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("%w: %.40q", ErrAddress, ip)
	}
	a.IP = addr.Unmap()
	return a, nil
}
