package onvifmeta_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/onvifmeta"
)

// TestSenderReportsAlign: the RTCP sender reports of both tracks map a frame's video and its
// metadata document to the same wall clock (a VMS aligns them by NTP). The server reports
// every few seconds, so the clip is fed at its own pace until both tracks have had one, each
// result a few frames after its frame as inference makes it (-short skips).
func TestSenderReportsAlign(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the first RTCP sender reports (10 s)")
	}
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 400)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	obs := srv.Observer("cam1")
	obs.ObserveAccessUnit(&aus[0])

	_, c, desc := describe(t, srv.Addr(), "cam1", gortsplib.ProtocolTCP)
	var h264 *format.H264
	vm := desc.FindFormat(&h264)
	var mm *description.Media
	for _, m := range desc.Medias {
		if m.Type == description.MediaTypeApplication {
			mm = m
		}
	}
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	// NTP of the first packet of each RTP timestamp, per track, once reports came.
	var mu sync.Mutex
	video, meta := map[uint32]time.Time{}, map[uint32]time.Time{}
	var videoTS, metaTS []uint32 // in arrival order, all packets' timestamps
	c.OnPacketRTP(vm, h264, func(pkt *rtp.Packet) {
		ntp, ok := c.PacketNTP(vm, pkt)
		mu.Lock()
		defer mu.Unlock()
		if len(videoTS) == 0 || videoTS[len(videoTS)-1] != pkt.Timestamp {
			videoTS = append(videoTS, pkt.Timestamp)
		}
		if ok {
			video[pkt.Timestamp] = ntp
		}
	})
	c.OnPacketRTP(mm, mm.Formats[0], func(pkt *rtp.Packet) {
		ntp, ok := c.PacketNTP(mm, pkt)
		mu.Lock()
		defer mu.Unlock()
		if len(metaTS) == 0 || metaTS[len(metaTS)-1] != pkt.Timestamp {
			metaTS = append(metaTS, pkt.Timestamp)
		}
		if ok {
			meta[pkt.Timestamp] = ntp
		}
	})
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}

	// Feed like a camera: each frame at its PTS, its result lag frames (250 ms) later.
	const lag = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		start := time.Now()
		for i := 1; i < len(aus) && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(aus[i].PTS - aus[1].PTS)); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
			}
			obs.ObserveAccessUnit(&aus[i])
			if i > lag { // the result comes lag frames later (inference latency)
				_ = srv.Write(result(i-lag, &aus[i-lag], 768, 432))
			}
		}
	}()
	// Frame k (counting from the client's first) on both tracks, each with its NTP.
	var vNTP, mNTP time.Time
	testutil.Eventually(t, 60*time.Second, "a frame with an NTP time on both tracks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k := len(metaTS) - 1; k >= 0; k-- {
			if k >= len(videoTS) {
				continue
			}
			v, okv := video[videoTS[k]]
			m, okm := meta[metaTS[k]]
			if okv && okm {
				vNTP, mNTP = v, m
				return true
			}
		}
		return false
	})
	cancel()
	<-fed
	if d := vNTP.Sub(mNTP); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("a frame's video at %v, its metadata at %v: %v apart", vNTP, mNTP, d)
	}
}
