package cascade_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/cascade"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/testutil"
)

const timeLayout = "2006-01-02T15:04:05"

// TestRecordInfo: the upper platform's RecordInfo query of a channel (GB/T 28181-2016
// §A.2.4.5) is answered with the stream's recorded spans in the range (§A.2.6.7): segments
// that follow one another make one span, spans are clipped to the range, SumNum counts all,
// parts hold up to 20 items, over UDP within 700 bytes, at most 256 items; Type alarm lists none; a
// bad range is 400, a query of vinfer itself or of an unknown channel 404.
func TestRecordInfo(t *testing.T) {
	base := time.Date(2026, 5, 6, 10, 0, 0, 0, time.Local)
	at := func(min float64) time.Time { return base.Add(time.Duration(min * float64(time.Minute))) }
	recs := []cascade.Span{{Start: at(0), End: at(1)}, {Start: at(1.01), End: at(2)}, // one span
		{Start: at(5), End: at(6)}, {Start: at(8), End: at(9)}, {Start: at(11), End: at(12)}, {Start: at(14), End: at(15)}}
	for i := range 400 { // a day later, 400 spans with gaps
		recs = append(recs, cascade.Span{Start: at(24*60 + 2*float64(i)), End: at(24*60 + 2*float64(i) + 1)})
	}
	recordings := func(stream string, from, to time.Time) []cascade.Span {
		var out []cascade.Span
		for _, r := range recs {
			if stream == "cam1" && r.End.After(from) && r.Start.Before(to) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tr := range []string{"UDP", "TCP"} {
		t.Run(tr, func(t *testing.T) {
			up := upsim.New(t, tr, upperID, password)
			logs := &testutil.LogBuffer{}
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(logs)
				}
			})
			u := config.GB28181Upstream{ServerID: upperID, Address: up.Addr(), Transport: strings.ToLower(tr), Password: password,
				Local: "127.0.0.1:0", Channels: []config.GB28181UpChannel{{ID: channel1, Stream: "cam1", Name: "大门"}, {ID: channel2, Stream: "cam2"}}}
			if err := u.Init(0, lowerID); err != nil {
				t.Fatal(err)
			}
			c := &cascade.Cascade{Upstreams: []config.GB28181Upstream{u}, Recordings: recordings,
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			if err := c.Init(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })

			// items gathers the parts of the response to sn until SumNum items came, as WVP does
			items := func(sn string) (sum string, spans []string) {
				t.Helper()
				responses(t, up, "RecordInfo", sn, func(ms []*upsim.Msg) bool {
					spans = nil
					for _, m := range ms {
						sum = m.Field("SumNum")
						if m.Field("DeviceID") != channel1 || m.Field("Name") != "大门" {
							t.Fatalf("response:\n%s", m.Text())
						}
						for _, item := range strings.Split(m.Text(), "<Item>")[1:] {
							it := &upsim.Msg{Body: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + item)}
							if it.Field("Type") != "time" || it.Field("DeviceID") != channel1 {
								t.Fatalf("item:\n%s", item)
							}
							spans = append(spans, it.Field("StartTime")+"/"+it.Field("EndTime"))
						}
					}
					return len(ms) > 0 && sum == strconv.Itoa(len(spans))
				})
				return sum, spans
			}

			m, sn := up.RecordInfo(channel1, at(0.5).Format(timeLayout), at(14.5).Format(timeLayout), "all")
			if m.Status() != 200 {
				t.Fatalf("RecordInfo: %s", m.Start)
			}
			sum, got := items(sn)
			want := []string{"2026-05-06T10:00:30/2026-05-06T10:02:00", "2026-05-06T10:05:00/2026-05-06T10:06:00",
				"2026-05-06T10:08:00/2026-05-06T10:09:00", "2026-05-06T10:11:00/2026-05-06T10:12:00", "2026-05-06T10:14:00/2026-05-06T10:14:30"}
			if sum != "5" || strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("SumNum %s, spans %v, want %v", sum, got, want)
			}
			parts := up.Messages(func(m *upsim.Msg) bool { return m.Field("SN") == sn })
			if tr == "TCP" && len(parts) != 1 || tr == "UDP" && len(parts) < 2 {
				t.Fatalf("%d parts over %s", len(parts), tr)
			}
			for _, p := range parts {
				if tr == "UDP" && len(p.Body) > 700 {
					t.Fatalf("a part over UDP of %d bytes, want ≤ 700", len(p.Body))
				}
			}

			if tr == "TCP" { // the bound: 256 of the 400
				_, sn = up.RecordInfo(channel1, at(24*60).Format(timeLayout), at(48*60).Format(timeLayout), "time")
				if sum, got = items(sn); sum != "256" || got[0] != "2026-05-07T10:00:00/2026-05-07T10:01:00" {
					t.Fatalf("SumNum %s, first %v", sum, got[:1])
				}
			}

			_, sn = up.RecordInfo(channel1, at(0).Format(timeLayout), at(10).Format(timeLayout), "alarm")
			if sum, got = items(sn); sum != "0" || len(got) != 0 {
				t.Fatalf("alarm recordings: SumNum %s, %v", sum, got)
			}
			for _, q := range [][3]string{{channel1, "yesterday", at(1).Format(timeLayout)}, {channel1, at(2).Format(timeLayout), at(1).Format(timeLayout)}} {
				if m, _ := up.RecordInfo(q[0], q[1], q[2], "all"); m.Status() != 400 {
					t.Fatalf("RecordInfo %v: %s, want 400", q, m.Start)
				}
			}
			for _, id := range []string{lowerID, other} {
				if m, _ := up.RecordInfo(id, at(0).Format(timeLayout), at(1).Format(timeLayout), "all"); m.Status() != 404 {
					t.Fatalf("RecordInfo of %s: %s, want 404", id, m.Start)
				}
			}
		})
	}
}
