package onvifmeta_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
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
	for i := range limit { // each from its own address: one address alone may hold fewer
		held = append(held, dialFrom(t, fmt.Sprintf("127.0.0.%d", 10+i), srv.Addr()))
	}
	// Each held connection is served: it answers OPTIONS.
	if err := optionsOK(held[0], srv.Addr()); err != nil {
		t.Fatal(err)
	}
	extra := dialFrom(t, "127.0.0.9", srv.Addr())
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
		err = optionsOK(c, srv.Addr())
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

// dialFrom connects to addr from the loopback address ip (any 127.0.0.0/8 address is local).
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: waitLimit, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// optionsOK sends OPTIONS on c and reads the status line: nil for 200.
func optionsOK(c net.Conn, addr string) error {
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.Write([]byte("OPTIONS rtsp://" + addr + "/ RTSP/1.0\r\nCSeq: 1\r\n\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "RTSP/1.0 200") {
		return errors.New(line)
	}
	return nil
}

// TestConnectionsPerAddress: one address holds at most max_clients+4 connections; one more
// from it is closed on accept and counted, while another address is still served (one client
// silent on every place refused everyone else).
func TestConnectionsPerAddress(t *testing.T) {
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", MaxClients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const perAddr = 1 + 4
	var held []net.Conn
	for range perAddr {
		held = append(held, dialFrom(t, "127.0.0.1", srv.Addr()))
	}
	if err := optionsOK(held[perAddr-1], srv.Addr()); err != nil {
		t.Fatal(err)
	}
	extra := dialFrom(t, "127.0.0.1", srv.Addr())
	extra.SetReadDeadline(time.Now().Add(waitLimit))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("connection %d from one address: read %d, %v; want it closed by the server", perAddr+1, n, err)
	}
	if got := srv.Counters().ConnsRefused; got != 1 {
		t.Fatalf("connections refused %d, want 1", got)
	}
	if err := optionsOK(dialFrom(t, "127.0.0.2", srv.Addr()), srv.Addr()); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// A place given back is this address's again.
	held[0].Close()
	testutil.Eventually(t, waitLimit, "a place of 127.0.0.1 given back", func() bool {
		c := dialFrom(t, "127.0.0.1", srv.Addr())
		defer c.Close()
		return optionsOK(c, srv.Addr()) == nil
	})
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
