package onvifmeta_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/vinfer/vinfer/onvifmeta"
)

// TestConnectionsBounded: connections that send nothing (or never authenticate) are bounded
// to 2×max_clients+8 open at once: one more is closed on accept, counted, and a place given
// back admits a new client (thousands held the process's file descriptors for a minute each).
func TestConnectionsBounded(t *testing.T) {
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", MaxClients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const limit = 2*1 + 8
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range limit {
		c, err := net.DialTimeout("tcp", srv.Addr(), waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Each held connection is served: it answers OPTIONS.
	options := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(waitLimit))
		if _, err := c.Write([]byte("OPTIONS rtsp://" + srv.Addr() + "/ RTSP/1.0\r\nCSeq: 1\r\n\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if line[:12] != "RTSP/1.0 200" {
			return errors.New(line)
		}
		return nil
	}
	if err := options(held[0]); err != nil {
		t.Fatal(err)
	}
	extra, err := net.DialTimeout("tcp", srv.Addr(), waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(waitLimit))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("connection %d: read %d, %v; want it closed by the server", limit+1, n, err)
	}
	if got := srv.Counters().ConnsRefused; got != 1 {
		t.Fatalf("connections refused %d, want 1", got)
	}
	held[1].Close()
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := net.DialTimeout("tcp", srv.Addr(), waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		err = options(c)
		c.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no place given back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestSilentConnectionClosed: a connection that sends nothing is closed after 10 s, not after
// gortsplib's idle minute, so silent connections give their places back sooner.
func TestSilentConnectionClosed(t *testing.T) {
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := net.DialTimeout("tcp", srv.Addr(), waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(40 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Fatalf("a silent connection: read %d, %v; want it closed by the server before gortsplib's idle minute", n, err)
	}
}
