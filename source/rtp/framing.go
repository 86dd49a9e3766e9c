package rtp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest packet RFC 4571 framing carries (a 16-bit length).
const MaxFrame = 0xFFFF

// FrameReader reads RTP and RTCP packets sent over a TCP connection with RFC 4571 framing:
// each packet is preceded by its length as a 16-bit big-endian integer. GB28181 uses it for
// media over TCP. Zero-length frames (keep-alives) are skipped.
type FrameReader struct {
	br *bufio.Reader
}

// NewFrameReader returns a FrameReader reading from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{br: bufio.NewReaderSize(r, MaxFrame+2)}
}

// Next returns the next packet. The slice is valid until the next call. It returns io.EOF at a
// clean end between frames and io.ErrUnexpectedEOF for a stream cut inside a frame.
func (f *FrameReader) Next() ([]byte, error) {
	for {
		hdr, err := f.br.Peek(2)
		if err != nil {
			if errors.Is(err, io.EOF) && len(hdr) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n := int(binary.BigEndian.Uint16(hdr))
		if _, err := f.br.Discard(2); err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		b, err := f.br.Peek(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if _, err := f.br.Discard(n); err != nil {
			return nil, err
		}
		return b, nil
	}
}

// AppendFrame appends pkt with its RFC 4571 length prefix to dst. It returns an error when pkt
// is longer than MaxFrame.
func AppendFrame(dst, pkt []byte) ([]byte, error) {
	if len(pkt) > MaxFrame {
		return dst, fmt.Errorf("rtp: packet of %d bytes is too long for RFC 4571 framing (max %d)", len(pkt), MaxFrame)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(pkt)))
	return append(dst, pkt...), nil
}
