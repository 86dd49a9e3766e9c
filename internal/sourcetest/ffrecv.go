package sourcetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FFmpegReceiver is Debian's ffmpeg receiving RTP described by an SDP file and decoding it
// (`-f framecrc`, one line per decoded frame), the reference a source's loss behaviour is
// measured against.
type FFmpegReceiver struct {
	cmd  *exec.Cmd
	out  *safeBuffer
	err  *safeBuffer
	done chan struct{}
	// Args is the receiving command line, for reports.
	Args []string
}

// ReceiverSDP writes an SDP for an RTP stream arriving at 127.0.0.1:port, from the SDP that
// FFmpegSDP wrote for the sender.
func ReceiverSDP(t testing.TB, senderSDP string, port int) string {
	t.Helper()
	b, err := os.ReadFile(senderSDP)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^m=video \d+`).ReplaceAllString(string(b), fmt.Sprintf("m=video %d", port))
	p := filepath.Join(t.TempDir(), "recv.sdp")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// FFmpegReceive starts ffmpeg receiving the stream sdp describes; it returns once ffmpeg holds
// the RTP port (port), so that a sender started next loses nothing to a late receiver.
func FFmpegReceive(t testing.TB, sdp string, port int) *FFmpegReceiver {
	t.Helper()
	ffmpeg := Tool(t, "ffmpeg")
	r := &FFmpegReceiver{out: &safeBuffer{}, err: &safeBuffer{}, done: make(chan struct{})}
	r.Args = []string{"ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-i", sdp,
		"-fps_mode", "passthrough", "-f", "framecrc", "-"}
	r.cmd = exec.Command(ffmpeg, r.Args[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.err
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.cmd.Wait() //nolint:errcheck
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill() //nolint:errcheck
		<-r.done
	})
	for { // wait until ffmpeg has bound the port
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return r
		}
		c.Close()
		select {
		case <-r.done:
			t.Fatalf("ffmpeg receiver exited: %s", r.err.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Frames returns the number of frames decoded so far.
func (r *FFmpegReceiver) Frames() int {
	n := 0
	for _, l := range strings.Split(r.out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

// Stop ends ffmpeg once no frame was decoded for quiet (the stream is over), and returns the
// number of frames it decoded.
func (r *FFmpegReceiver) Stop(quiet time.Duration) int {
	last, since := -1, time.Now()
	for time.Since(since) < quiet {
		if n := r.Frames(); n != last {
			last, since = n, time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.cmd.Process.Signal(os.Interrupt) //nolint:errcheck
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill() //nolint:errcheck
		<-r.done
	}
	return r.Frames()
}
