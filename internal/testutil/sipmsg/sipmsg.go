// Package sipmsg is the SIP message of the GB28181 test peers (gbsim's device, upsim's upper
// platform): parsing a datagram, reading one from a TCP stream (RFC 3261 §18.3) and its
// header and body accessors.
package sipmsg

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// MaxBody bounds a body read from a stream, bytes.
const MaxBody = 1 << 20

// ErrBody is a stream message whose Content-Length is negative or over MaxBody.
var ErrBody = errors.New("sipmsg: Content-Length out of range")

// Msg is a SIP message as received: its start line, its header lines and its body.
type Msg struct {
	Start string
	Hdrs  []string // "Name: value" as received
	Body  []byte
}

// Parse splits the raw message b at its blank line; the body is copied.
func Parse(b []byte) *Msg {
	head, body, _ := bytes.Cut(b, []byte("\r\n\r\n"))
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	return &Msg{Start: lines[0], Hdrs: lines[1:], Body: append([]byte(nil), body...)}
}

// Read reads the next message from a stream, skipping CRLF keepalives before it, and returns
// it raw (header, blank line, Content-Length bytes of body). Errors: r's, or ErrBody.
func Read(r *bufio.Reader) ([]byte, error) {
	var head bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(line) == "" {
			if head.Len() == 0 {
				continue // keepalive CRLF
			}
			break
		}
		head.WriteString(line)
	}
	n := 0
	for _, l := range strings.Split(head.String(), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (strings.EqualFold(strings.TrimSpace(k), "Content-Length") || strings.TrimSpace(k) == "l") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n < 0 || n > MaxBody {
		return nil, ErrBody
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return append(append(head.Bytes(), "\r\n"...), body...), nil
}

// Get returns the first header named name (case-insensitive), "" when none.
func (m *Msg) Get(name string) string {
	for _, h := range m.Hdrs {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// All returns every header line named name.
func (m *Msg) All(name string) []string {
	var out []string
	for _, h := range m.Hdrs {
		if k, _, _ := strings.Cut(h, ":"); strings.EqualFold(strings.TrimSpace(k), name) {
			out = append(out, h)
		}
	}
	return out
}

// Status is a response's status code (0 for a request, or a request that timed out).
func (m *Msg) Status() int {
	f := strings.Fields(m.Start)
	if len(f) < 2 || !strings.HasPrefix(m.Start, "SIP/2.0") {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// Method is a request's method.
func (m *Msg) Method() string { return strings.Fields(m.Start)[0] }

// Text is the body as UTF-8: decoded from GB18030 (a superset of GB2312 and GBK) unless it
// declares UTF-8.
func (m *Msg) Text() string {
	if bytes.Contains(m.Body[:min(len(m.Body), 64)], []byte(`encoding="UTF-8"`)) {
		return string(m.Body)
	}
	b, err := simplifiedchinese.GB18030.NewDecoder().Bytes(m.Body)
	if err != nil {
		return string(m.Body)
	}
	return string(b)
}

// Field returns the text of the first XML element name in the body ("" when none).
func (m *Msg) Field(name string) string {
	_, after, ok := bytes.Cut([]byte(m.Text()), []byte("<"+name+">"))
	if !ok {
		return ""
	}
	v, _, _ := bytes.Cut(after, []byte("</"+name+">"))
	return string(v)
}
