package sourcetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// UDPPortPair returns an even port p such that p and p+1 are free on 127.0.0.1 (RTP and RTCP,
// RFC 3550 §11). Another process may take them before the caller does; tests accept that.
func UDPPortPair(t testing.TB) int { return testutil.UDPPortPair(t) }

// TCPPort returns a free TCP port on 127.0.0.1.
func TCPPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FFmpegSDP writes the SDP that `ffmpeg -f rtp` announces for clip and returns its path.
func FFmpegSDP(t testing.TB, clip string) string {
	t.Helper()
	ffmpeg := Tool(t, "ffmpeg")
	sdp := filepath.Join(t.TempDir(), "stream.sdp")
	out, err := exec.Command(ffmpeg, "-v", "error", "-i", clip, "-map", "0:v:0", "-c", "copy",
		"-frames:v", "1", "-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:9").CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg SDP: %v\n%s", err, out)
	}
	return sdp
}

// FFmpegRTP starts Debian's ffmpeg sending the video of clip (copied, not re-encoded) as RTP to
// 127.0.0.1:port, RTCP to port+1, at readrate times real time. It is stopped at the end of the
// test; Wait reports its exit.
func FFmpegRTP(t testing.TB, clip string, port int, readrate float64) *Process {
	t.Helper()
	ffmpeg := Tool(t, "ffmpeg")
	return Start(t, ffmpeg, "-v", "error", "-readrate", strconv.FormatFloat(readrate, 'f', -1, 64),
		"-i", clip, "-map", "0:v:0", "-c", "copy", "-f", "rtp",
		fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1400", port))
}

// Process is an external program started by a test.
type Process struct {
	cmd  *exec.Cmd
	out  *safeBuffer
	done chan struct{}
	err  error
}

// Start runs a program until it exits or the test ends.
func Start(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{cmd: exec.CommandContext(ctx, name, args...), out: &safeBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// Wait waits for the program to exit, at most d, and returns its output and exit error.
func (p *Process) Wait(d time.Duration) (string, error) {
	select {
	case <-p.done:
		return p.out.String(), p.err
	case <-time.After(d):
		return p.out.String(), fmt.Errorf("still running after %v", d)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// Relay forwards UDP datagrams from its address to Target, dropping each with probability
// Loss (pseudo-random, seeded) while Lossy is set. Mirror adds receivers of the same datagrams
// (the same ones dropped), so two receivers can be compared on one loss pattern.
type Relay struct {
	conn    *net.UDPConn
	target  *net.UDPAddr
	mu      sync.Mutex
	outs    []*net.UDPConn
	loss    float64
	rng     *rand.Rand
	Lossy   atomic.Bool
	Dropped atomic.Int64
	Passed  atomic.Int64
}

// NewRelay listens on 127.0.0.1:port (0 for any) and forwards to target.
func NewRelay(t testing.TB, port int, target string, loss float64, seed uint64) *Relay {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	ta, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	// A relay that a loaded machine does not schedule for a while must not lose datagrams of
	// its own: a buffer as large as the sources' (udpmux.ReadBufferSize; Linux caps it at
	// net.core.rmem_max), so that only the seeded loss drops packets.
	_ = conn.SetReadBuffer(4 << 20)
	r := &Relay{conn: conn, target: ta, loss: loss, rng: rand.New(rand.NewPCG(seed, seed))}
	r.Lossy.Store(true)
	out, err := net.DialUDP("udp", nil, ta)
	if err != nil {
		t.Fatal(err)
	}
	r.outs = []*net.UDPConn{out}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if r.Lossy.Load() && r.rng.Float64() < r.loss {
				r.Dropped.Add(1)
				continue
			}
			r.Passed.Add(1)
			r.mu.Lock()
			for _, o := range r.outs {
				o.Write(buf[:n]) //nolint:errcheck
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, o := range r.outs {
			o.Close()
		}
	})
	return r
}

// Mirror also forwards every datagram the relay passes to target.
func (r *Relay) Mirror(t testing.TB, target string) {
	t.Helper()
	ta, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	out, err := net.DialUDP("udp", nil, ta)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.outs = append(r.outs, out)
	r.mu.Unlock()
}

// Port returns the relay's UDP port.
func (r *Relay) Port() int { return r.conn.LocalAddr().(*net.UDPAddr).Port }

// SendGarbage sends n datagrams that are not RTP (random lengths and bytes, version bits
// other than 2) to addr, one every interval, in the background. The returned function reports
// how many were sent.
func SendGarbage(t testing.TB, addr string, n int, interval time.Duration) func() int64 {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(7, 7))
		b := make([]byte, 1500)
		for i := range n {
			l := 1 + rng.IntN(len(b))
			for j := range l {
				b[j] = byte(rng.Uint32())
			}
			if i%4 == 0 {
				l = min(l, 7) // too short for any RTP header
			} else {
				b[0] = b[0]&0x3F | byte(rng.IntN(2))<<6 // version 0 or 1
			}
			if _, err := conn.Write(b[:l]); err == nil {
				sent.Add(1)
			}
			time.Sleep(interval)
		}
	}()
	t.Cleanup(func() {
		conn.Close()
	})
	return func() int64 {
		<-done
		return sent.Load()
	}
}
