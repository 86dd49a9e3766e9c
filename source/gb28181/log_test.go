package gb28181

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// TestLogNamesSSRCOnce: a GB28181 source's log lines carried ssrc= twice, its own beside the
// platform channel's or the sender's (issue 29, item 8b). Opened from a URL and as the
// platform's channel opens it, every line names ssrc at most once, the sender's as sender_ssrc.
func TestLogNamesSSRCOnce(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	const ssrc = 0x10000001
	ssrcKey := regexp.MustCompile(`(^| )ssrc=`)
	for _, how := range []string{"url", "platform"} {
		t.Run(how, func(t *testing.T) {
			logs := &testutil.LogBuffer{}
			log := slog.New(slog.NewTextHandler(logs, nil))
			port := sourcetest.UDPPortPair(t)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			var s *Source
			if how == "url" {
				prev := slog.Default()
				slog.SetDefault(log)
				src, err := Kind.Open(&config.Stream{ID: "cam", Source: fmt.Sprintf("gb28181://%s?ssrc=%d", addr, ssrc)}, source.Policy{})
				slog.SetDefault(prev)
				if err != nil {
					t.Fatal(err)
				}
				s = src.(*Source)
				t.Cleanup(func() { s.Close() })
			} else { // gb28181/platform/channel.go's logger
				s = open(t, &Source{ListenAddr: addr, SSRC: ssrc, RTCPAddr: "none",
					Logger: log.With("stream", "cam", "device", "34020000001320000001", "ssrc", fmt.Sprintf("%010d", ssrc))})
			}
			newSender(c, ssrc, ps.Quirks{}).run(0, 30, udpWriter(t, addr))
			testutil.Eventually(t, 30*time.Second, "the sender logged", func() bool { return strings.Contains(logs.String(), "RTP sender") })
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if n := len(ssrcKey.FindAllString(l, -1)); n != 1 {
					t.Errorf("ssrc= %d times in %s", n, l)
				}
			}
		})
	}
}
