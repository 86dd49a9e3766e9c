package sourcetest

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/testutil"
)

// FFmpegPSReceiver is the reference for MPEG-PS over RTP (GB28181), which FFmpeg's RTP
// receiver does not take: a UDP port whose RTP payloads are written, in arrival order, to
// Debian's ffmpeg reading a program stream (`-f mpeg -i pipe:0 … -f framecrc -`, one line per
// decoded frame), as a GB28181 receiver that strips RTP and demuxes the PS would.
type FFmpegPSReceiver struct {
	conn     *net.UDPConn
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out, err *safeBuffer
	done     chan struct{}
	pumped   chan struct{}
	// Packets counts the RTP packets received.
	Packets atomic.Int64
	// Args is the ffmpeg command line, for reports.
	Args []string
}

// FFmpegReceivePS starts the receiver on 127.0.0.1:port.
func FFmpegReceivePS(t testing.TB, port int) *FFmpegPSReceiver {
	t.Helper()
	ffmpeg := Tool(t, "ffmpeg")
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	r := &FFmpegPSReceiver{conn: conn, out: &safeBuffer{}, err: &safeBuffer{}, done: make(chan struct{}), pumped: make(chan struct{})}
	r.Args = []string{"ffmpeg", "-v", "error", "-f", "mpeg", "-i", "pipe:0", "-fps_mode", "passthrough", "-f", "framecrc", "-"}
	r.cmd = exec.Command(ffmpeg, r.Args[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.err
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.cmd.Wait() //nolint:errcheck
		close(r.done)
	}()
	go func() {
		defer close(r.pumped)
		defer r.stdin.Close()
		buf := make([]byte, 65536)
		var p pionrtp.Packet
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if p.Unmarshal(buf[:n]) != nil {
				continue
			}
			r.Packets.Add(1)
			if _, err := r.stdin.Write(p.Payload); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		r.cmd.Process.Kill() //nolint:errcheck
		<-r.done
	})
	return r
}

// Stop waits until packets datagrams were received (those the relay passed), ends ffmpeg's
// input and returns the number of frames it decoded.
func (r *FFmpegPSReceiver) Stop(t testing.TB, packets int64) int {
	t.Helper()
	testutil.Eventually(t, time.Minute, fmt.Sprintf("the PS receiver to get %d packets", packets), func() bool { return r.Packets.Load() >= packets })
	r.conn.Close()
	<-r.pumped
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatalf("ffmpeg did not end: %s", r.err.String())
	}
	n := 0
	for _, l := range strings.Split(r.out.String(), "\n") {
		if l != "" && l[0] != '#' {
			n++
		}
	}
	return n
}
