package cascade_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/cascade"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// recT0 is the recording's start: whole seconds, as t= lines give them.
var recT0 = time.Unix(1780000000, 0)

// recordClip records the first 20 s of the clip as stream cam1 (3 s segments), stamped from
// recT0, and returns the recorder.
func recordClip(t *testing.T, clip *sourcetest.Clip) *record.Recorder {
	t.Helper()
	r := &record.Recorder{Dir: t.TempDir(), Segment: 3 * time.Second}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	o := r.Observer("cam1")
	gops := int64(0)
	for i, s := range clip.Samples {
		pts, dts := time.Duration(s.PTS)*time.Second/90000, time.Duration(s.DTS)*time.Second/90000
		if pts > 20*time.Second {
			break
		}
		o.ObserveAccessUnit(&media.AccessUnit{Codec: clip.Codec, Data: clip.AnnexB(i), Key: s.Key, PTS: pts, DTS: dts, Wallclock: recT0.Add(pts)})
		if s.Key && i > 0 {
			gops++
			testutil.Eventually(t, wait, "the recorder takes the GOP", func() bool { st := r.Stats(); return st.Fragments+st.Dropped >= gops })
		}
	}
	o.EndOfStream()
	r.Close()
	return r
}

// crcs is FFmpeg's per-frame CRC of a file of format (framecrc's last column).
func crcs(t *testing.T, ffmpeg, format, file string) []string {
	t.Helper()
	out, err := exec.Command(ffmpeg, "-v", "error", "-f", format, "-i", file, "-f", "framecrc", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", file, err, out)
	}
	var c []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, "#") {
			c = append(c, f[len(f)-1])
		}
	}
	return c
}

// TestPlayback: the upper platform asks a channel's recordings (RecordInfo) and plays a range
// back (s=Playback, t= Unix seconds, over UDP paced at real time) or downloads one
// (s=Download, downloadspeed 8, TCP): the PS it receives is the recorded coded video of the
// GOPs holding the range, FFmpeg decoding it to exactly the frames it decodes from the
// recording's export of that range (its ends are key frames, so the export, cut at frames by
// its edit list, shows the same GOPs; mid-GOP the PS starts at the key frame); MediaStatus 121 comes at the end in the INVITE's Call-ID
// and the session stays until BYE. A range not recorded is 404, a reversed one or a downloadspeed over 16 488, a fifth
// playback at once 486.
func TestPlayback(t *testing.T) {
	clip := sourcetest.LoadClip(t, "videos/one-by-one-person-detection.mp4") // 10 fps, a key frame a second
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	rec := recordClip(t, clip)
	for _, tc := range []struct {
		sip, media string
		from, to   int64 // seconds after recT0
		speed      int
	}{{"UDP", "udp", 5, 8, 0}, {"TCP", "tcp-passive", 2, 18, 8}} {
		t.Run(tc.sip+"-"+tc.media, func(t *testing.T) {
			up := upsim.New(t, tc.sip, upperID, password)
			logs := &testutil.LogBuffer{}
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(logs)
				}
			})
			u := config.GB28181Upstream{ServerID: upperID, Address: up.Addr(), Transport: strings.ToLower(tc.sip), Password: password,
				Local: "127.0.0.1:0", Channels: []config.GB28181UpChannel{{ID: channel1, Stream: "cam1"}}}
			if err := u.Init(0, lowerID); err != nil {
				t.Fatal(err)
			}
			c := &cascade.Cascade{Upstreams: []config.GB28181Upstream{u}, Replay: rec.Replay, Online: func(string) bool { return false },
				Recordings: func(stream string, from, to time.Time) []cascade.Span {
					segs, _ := rec.Segments(stream, from, to)
					var out []cascade.Span
					for _, s := range segs {
						out = append(out, cascade.Span{Start: s.Start, End: s.End})
					}
					return out
				},
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			if err := c.Init(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })

			// what WVP's timeline shows: one span of the recording
			_, sn := up.RecordInfo(channel1, recT0.Format(timeLayout), recT0.Add(time.Hour).Format(timeLayout), "all")
			r := responses(t, up, "RecordInfo", sn, func(ms []*upsim.Msg) bool { return len(ms) > 0 })[0]
			if r.Field("SumNum") != "1" || r.Field("StartTime") != recT0.Format(timeLayout) {
				t.Fatalf("RecordInfo:\n%s", r.Text())
			}

			from, to := recT0.Add(time.Duration(tc.from)*time.Second), recT0.Add(time.Duration(tc.to)*time.Second)
			var want int
			if err := rec.Replay(context.Background(), "cam1", from, to, func(*media.AccessUnit, time.Time) error { want++; return nil }); err != nil {
				t.Fatal(err)
			}
			rx := upsim.NewReceiver(t, tc.media)
			invited := time.Now()
			m, callID := up.Playback(channel1, rx, "1100000001", from.Unix(), to.Unix(), tc.speed)
			if m.Status() != 200 {
				t.Fatalf("INVITE: %s", m.Start)
			}
			ended := func() bool {
				return len(up.Messages(func(m *upsim.Msg) bool {
					return m.Field("CmdType") == "MediaStatus" && m.Field("NotifyType") == "121" && m.Get("Call-ID") == callID && m.Field("DeviceID") == channel1
				})) == 1
			}
			if tc.speed == 0 {
				// four more at once are the bound
				for i := range 4 {
					m, _ := up.Playback(channel1, upsim.NewReceiver(t, "udp"), "1100000002", recT0.Unix(), recT0.Unix()+20, 0)
					if want := map[bool]int{true: 200, false: 486}[i < 3]; m.Status() != want {
						t.Fatalf("playback %d at once: %s, want %d", i+2, m.Start, want)
					}
				}
			}
			testutil.Eventually(t, wait, "MediaStatus 121", ended)
			// paced: the last unit's DTS (the range's GOPs less a frame) divided by the speed
			// had to pass first; load only adds to it
			pace := time.Duration(tc.to-tc.from)*time.Second - 100*time.Millisecond
			if tc.speed > 0 {
				pace /= time.Duration(tc.speed)
			}
			if took := time.Since(invited); took < pace {
				t.Fatalf("MediaStatus 121 %v after the INVITE, before the paced %v", took, pace)
			}
			frames := 0
			testutil.Eventually(t, wait, "every replayed frame received", func() bool {
				frames = 0
				d := ps.Demuxer{OnFrame: func(*ps.Frame) { frames++ }}
				d.Write(rx.PS())
				return frames >= want-1 // the demuxer hands the last frame over on the next pack
			})
			if c.Upstream(0).Sessions() == 0 {
				t.Fatal("the session ended before BYE")
			}
			if m := up.Bye(channel1, callID, upsim.ToTag(m)); m.Status() != 200 {
				t.Fatalf("BYE: %s", m.Start)
			}

			dir := t.TempDir()
			got := filepath.Join(dir, "rx.ps")
			if err := os.WriteFile(got, rx.PS(), 0o644); err != nil {
				t.Fatal(err)
			}
			exp := filepath.Join(dir, "range.mp4")
			f, _ := os.Create(exp)
			if err := rec.Export(f, "cam1", from, to); err != nil {
				t.Fatal(err)
			}
			f.Close()
			gc, wc := crcs(t, ffmpeg, "mpeg", got), crcs(t, ffmpeg, "mp4", exp)
			if len(wc) != want || !slices.Equal(gc, wc) {
				t.Fatalf("FFmpeg decoded %d frames of the PS, %d of the recording's range (%d units replayed); they differ", len(gc), len(wc), want)
			}
			t.Logf("%d frames of %v … %v, speed %d: identical", len(gc), tc.from, tc.to, tc.speed)

			if m, _ := up.Playback(channel1, upsim.NewReceiver(t, "udp"), "1100000003", recT0.Unix()+3600, recT0.Unix()+3700, 0); m.Status() != 404 {
				t.Fatalf("playback of a range not recorded: %s, want 404", m.Start)
			}
			if m, _ := up.Playback(channel1, upsim.NewReceiver(t, "udp"), "1100000003", recT0.Unix()+10, recT0.Unix()+5, 0); m.Status() != 488 {
				t.Fatalf("playback of a reversed range: %s, want 488", m.Start)
			}
			if m, _ := up.Playback(channel1, upsim.NewReceiver(t, "udp"), "1100000003", recT0.Unix()+2, recT0.Unix()+5, 99); m.Status() != 488 {
				t.Fatalf("download at speed 99: %s, want 488", m.Start)
			}
		})
	}
}
