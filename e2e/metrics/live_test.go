package metrics_test

import (
	"fmt"
	dto "github.com/prometheus/client_model/go"
	"github.com/vinfer/vinfer/internal/apptest"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/metrics"
	vmodel "github.com/vinfer/vinfer/model"
)

// lossyRelay forwards UDP datagrams to target, dropping every nth one.
type lossyRelay struct {
	conn            *net.UDPConn
	passed, dropped atomic.Int64
}

func newLossyRelay(t *testing.T, target string, nth int64) *lossyRelay {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(4 << 20) // a loaded machine must not drop datagrams at the relay
	out, err := net.Dial("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	r := &lossyRelay{conn: conn}
	go func() {
		buf := make([]byte, 65536)
		for i := int64(1); ; i++ {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if i%nth == 0 {
				r.dropped.Add(1)
				continue
			}
			r.passed.Add(1)
			out.Write(buf[:n]) //nolint:errcheck
		}
	}()
	t.Cleanup(func() { conn.Close(); out.Close() })
	return r
}

// TestLiveSourceMetrics: an RTP stream sent by ffmpeg through a relay that drops every 25th
// packet reports the packets and exactly the losses, and an RTSP camera that does not answer
// reports its failed connections.
func TestLiveSourceMetrics(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed (apt-get install ffmpeg)")
	}
	clip := asset(t, "videos/car-detection.mp4")
	sdp := filepath.Join(t.TempDir(), "stream.sdp")
	if out, err := exec.Command(ffmpeg, "-v", "error", "-i", clip, "-map", "0:v:0", "-c", "copy",
		"-frames:v", "1", "-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:9").CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg SDP: %v\n%s", err, out)
	}

	m, err := vmodel.Declare(asset(t, "models/yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "yolox"
	mx := metrics.New()
	a := apptest.MustApp(t, &config.Config{Models: []config.Model{m}}, app.Options{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: mx})
	defer a.Stop()
	done := make(chan struct{})
	defer close(done)
	mx.Watch(a, done)
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()

	port := testutil.UDPPortPair(t)
	relay := newLossyRelay(t, fmt.Sprintf("127.0.0.1:%d", port), 25)
	for _, s := range []config.Stream{
		{ID: "rtp", Source: fmt.Sprintf("rtp://127.0.0.1:%d?sdp=%s", port, sdp), Model: "yolox", Interval: 10},
		{ID: "cam", Source: "rtsp://127.0.0.1:1/live", Model: "yolox", Transport: config.TransportTCP},
	} {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	// 8 s of the clip at 4× real time.
	send := exec.Command(ffmpeg, "-v", "error", "-readrate", "4", "-t", "8", "-i", clip, "-map", "0:v:0",
		"-c", "copy", "-f", "rtp", fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1200", relay.conn.LocalAddr().(*net.UDPAddr).Port))
	if out, err := send.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	var fams map[string]*dto.MetricFamily
	testutil.Eventually(t, 30*time.Second, "the relayed packets counted by the source", func() bool {
		fams = scrape(t, srv.URL)
		n, _ := value(fams, "vinfer_rtp_packets_total", map[string]string{"stream": "rtp"})
		return n >= float64(relay.passed.Load())
	})
	rtpStream := map[string]string{"stream": "rtp"}
	packets, _ := value(fams, "vinfer_rtp_packets_total", rtpStream)
	lost, _ := value(fams, "vinfer_rtp_packets_lost_total", rtpStream)
	passed, dropped := float64(relay.passed.Load()), float64(relay.dropped.Load())
	t.Logf("relay passed %v, dropped %v; source counted %v packets, %v lost", passed, dropped, packets, lost)
	if passed < 100 || packets != passed {
		t.Errorf("vinfer_rtp_packets_total = %v, want the %v packets the relay passed", packets, passed)
	}
	// A loss after the last packet that arrived cannot be seen.
	if lost < dropped-1 || lost > dropped {
		t.Errorf("vinfer_rtp_packets_lost_total = %v, want the %v packets the relay dropped", lost, dropped)
	}
	if v, ok := value(fams, "vinfer_stream_info", map[string]string{"stream": "rtp", "live": "true"}); !ok || v != 1 {
		t.Errorf("vinfer_stream_info{stream=rtp,live=true} = %v (present %v)", v, ok)
	}
	// With every 25th packet lost most frames are damaged: the source drops them and waits
	// for the next key frame (car-detection has one every ~4 s), so few reach the decoder.
	if v, _ := value(fams, "vinfer_frames_decoded_total", rtpStream); v < 1 {
		t.Errorf("vinfer_frames_decoded_total{stream=rtp} = %v: the stream did not play", v)
	}
	if v, _ := value(fams, "vinfer_source_access_units_dropped_total", rtpStream); v < 1 {
		t.Errorf("vinfer_source_access_units_dropped_total{stream=rtp} = %v, want the damaged frames counted", v)
	}
	if v, ok := value(fams, "vinfer_source_connect_failures_total", map[string]string{"stream": "cam"}); !ok || v < 1 {
		t.Errorf("vinfer_source_connect_failures_total{stream=cam} = %v (present %v), want ≥ 1", v, ok)
	}
	if v, _ := value(fams, "vinfer_source_reconnects_total", map[string]string{"stream": "cam"}); v != 0 {
		t.Errorf("vinfer_source_reconnects_total{stream=cam} = %v, want 0 (never connected)", v)
	}
	if v, _ := value(fams, "vinfer_streams_active", nil); v != 2 {
		t.Errorf("vinfer_streams_active = %v, want 2 live streams", v)
	}
}
