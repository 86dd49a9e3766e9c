package sipmsg

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestReadSkipsKeepalivesAndTakesTheBody(t *testing.T) {
	in := "\r\n\r\nMESSAGE sip:a@b SIP/2.0\r\nl: 5\r\nCall-ID: x\r\n\r\nhelloSIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	raw, err := Read(r)
	if err != nil {
		t.Fatal(err)
	}
	m := Parse(raw)
	if m.Method() != "MESSAGE" || m.Status() != 0 || m.Get("call-id") != "x" || string(m.Body) != "hello" {
		t.Fatalf("first: %+v", m)
	}
	raw, err = Read(r)
	if err != nil {
		t.Fatal(err)
	}
	if m := Parse(raw); m.Status() != 200 || len(m.Body) != 0 || len(m.All("Content-Length")) != 1 {
		t.Fatalf("second: %+v", m)
	}
	r = bufio.NewReader(strings.NewReader("MESSAGE sip:a@b SIP/2.0\r\nContent-Length: 2000000\r\n\r\n"))
	if _, err := Read(r); !errors.Is(err, ErrBody) {
		t.Fatalf("oversized body: %v, want ErrBody", err)
	}
}
