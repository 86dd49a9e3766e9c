package rtp

import (
	"bytes"
	"testing"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/live"
)

var clips = []string{"videos/car-detection.mp4", "videos/person-bicycle-car_hevc.mp4"}

// collect runs packets through a Depacketizer, with Loss before the packets at the indexes in
// lossBefore, and returns copies of the access units.
func collect(t *testing.T, c *sourcetest.Clip, sdp bool, pkts []*pionrtp.Packet, lossBefore map[int]bool) ([]media.AccessUnit, *live.Counters) {
	t.Helper()
	var out []media.AccessUnit
	var st live.Counters
	d := Depacketizer{Codec: c.Codec, Stats: &st, OnAccessUnit: func(au *media.AccessUnit) bool {
		cp := *au
		cp.Data = bytes.Clone(au.Data)
		out = append(out, cp)
		return true
	}}
	if sdp {
		d.ParamSets = c.ParamSets
	}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for i, p := range pkts {
		if lossBefore[i] {
			d.Loss()
		}
		d.Push(p, t0.Add(time.Duration(p.Timestamp-pkts[0].Timestamp)*time.Second/90000))
	}
	return out, &st
}

func TestDepacketizerClips(t *testing.T) {
	for _, name := range clips {
		for _, inband := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/sdp", true: "/inband"}[inband], func(t *testing.T) {
				c := sourcetest.LoadClip(t, name)
				pkts := c.Packetize(t, 0, len(c.Samples), 96, 0x1234, 65000, 4_000_000_000, inband)
				aus, st := collect(t, c, !inband, pkts, nil)
				m := sourcetest.Matcher{Clip: c}
				for i := range aus {
					m.Check(t, &aus[i])
				}
				if m.Matched != len(c.Samples) || m.Skipped != 0 {
					t.Fatalf("matched %d of %d samples, skipped %d", m.Matched, len(c.Samples), m.Skipped)
				}
				s := st.Snapshot()
				if s.AccessUnits != uint64(len(c.Samples)) || s.Dropped != 0 || s.DecodeErrors != 0 {
					t.Fatalf("stats %+v", s)
				}
				if inband != (s.ParamSetsInserted == 0) {
					t.Fatalf("%d key frames got parameter sets inserted", s.ParamSetsInserted)
				}
			})
		}
	}
}

func TestDepacketizerInfo(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[1])
	d := Depacketizer{Codec: c.Codec, ParamSets: c.ParamSets, OnAccessUnit: func(*media.AccessUnit) bool { return true }}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	if info := d.Info(); info.Codec != media.CodecH265 || info.Width != 768 || info.Height != 432 {
		t.Fatalf("info %+v", info)
	}
}

// packetsOf returns the index of the first packet of each sample.
func firstPackets(pkts []*pionrtp.Packet) []int {
	var idx []int
	for i, p := range pkts {
		if i == 0 || p.Timestamp != pkts[i-1].Timestamp {
			idx = append(idx, i)
		}
	}
	return idx
}

func TestDepacketizerLoss(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	const n = 130 // car-detection: key frames at samples 0, 60, 120
	var keys []int
	for i := range n {
		if c.Samples[i].Key {
			keys = append(keys, i)
		}
	}
	if len(keys) < 3 {
		t.Fatalf("need 2 key frames in the first %d samples, have %v", n, keys)
	}
	pkts := c.Packetize(t, 0, n, 96, 1, 0, 0, false)
	first := firstPackets(pkts)
	for _, tc := range []struct {
		name        string
		drop        func() (drop map[int]bool)
		lostSamples int // samples of which no packet arrived
	}{
		{"second packet of a multi-packet sample", func() map[int]bool {
			for s := 5; s < n; s++ {
				if first[s+1]-first[s] > 2 {
					return map[int]bool{first[s] + 1: true}
				}
			}
			t.Fatal("no multi-packet sample")
			return nil
		}, 0},
		{"first packet of a sample", func() map[int]bool { return map[int]bool{first[7]: true} }, 0},
		{"last packet (marker) of a sample", func() map[int]bool { return map[int]bool{first[9] - 1: true} }, 0},
		{"a whole sample", func() map[int]bool {
			m := map[int]bool{}
			for i := first[11]; i < first[12]; i++ {
				m[i] = true
			}
			return m
		}, 1},
		{"inside a key frame", func() map[int]bool { return map[int]bool{first[keys[1]] + 3: true} }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := tc.drop()
			var kept []*pionrtp.Packet
			lossBefore := map[int]bool{}
			lost := false
			for i, p := range pkts {
				if drop[i] {
					lost = true
					continue
				}
				if lost {
					lossBefore[len(kept)] = true
					lost = false
				}
				kept = append(kept, p)
			}
			aus, st := collect(t, c, true, kept, lossBefore)
			// every sample of which a packet arrived is delivered, at its PTS; those that lost
			// packets are delivered with what arrived and counted as damaged
			hit := map[int]bool{} // samples that lost packets
			whole := 0            // samples that lost every packet
			for s := 0; s < n; s++ {
				end := len(pkts)
				if s+1 < len(first) {
					end = first[s+1]
				}
				all := true
				for i := first[s]; i < end; i++ {
					if drop[i] {
						hit[s] = true
					} else {
						all = false
					}
				}
				if all {
					whole++
				}
			}
			if whole != tc.lostSamples || len(aus) < n-len(hit) {
				t.Fatalf("delivered %d access units of %d samples, %d lost whole", len(aus), n, whole)
			}
			damaged := 0
			delivered := map[int]bool{}
			for _, au := range aus {
				i := sampleAt(c, au.PTS)
				if i < 0 || au.Discontinuity {
					t.Fatalf("access unit at %v: sample %d, discontinuity %v", au.PTS, i, au.Discontinuity)
				}
				delivered[i] = true
				if !bytes.Equal(au.Data, c.AnnexB(i)) {
					if !hit[i] {
						t.Fatalf("sample %d altered without loss", i)
					}
					damaged++
				}
			}
			for i := range n {
				if !hit[i] && !delivered[i] {
					t.Fatalf("intact sample %d not delivered", i)
				}
			}
			// a loss just before a new timestamp may have been the head of the new access unit
			// as well as the tail of the last: both count as damaged
			if s := st.Snapshot(); s.Damaged < uint64(damaged) || s.Damaged > uint64(damaged)+1 || s.Discontinuities != 0 {
				t.Fatalf("stats %+v, %d damaged", s, damaged)
			}
		})
	}
}

// sampleAt returns the clip's sample presented at pts after the first sample's PTS, -1 if none.
func sampleAt(c *sourcetest.Clip, pts time.Duration) int {
	for i, s := range c.Samples {
		if time.Duration(s.PTS-c.Samples[0].PTS)*time.Second/90000 == pts {
			return i
		}
	}
	return -1
}

func TestDepacketizerWithoutMarker(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	pkts := c.Packetize(t, 0, 30, 96, 1, 0, 0, false)
	for _, p := range pkts {
		p.Marker = false
	}
	aus, _ := collect(t, c, true, pkts, nil)
	m := sourcetest.Matcher{Clip: c}
	for i := range aus {
		m.Check(t, &aus[i])
	}
	// the last access unit is complete only when the next timestamp arrives
	if m.Matched != 29 {
		t.Fatalf("matched %d, want 29", m.Matched)
	}
}

func TestDepacketizerKeyWithoutParamSets(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	pkts := c.Packetize(t, 0, 60, 96, 1, 0, 0, false)
	aus, st := collect(t, c, false, pkts, nil) // no SDP, nothing in-band: undecodable
	if len(aus) != 0 || st.Snapshot().Dropped != 60 {
		t.Fatalf("delivered %d, stats %+v", len(aus), st.Snapshot())
	}
}

func BenchmarkDepacketizer(b *testing.B) {
	c := sourcetest.LoadClip(b, clips[0])
	pkts := c.Packetize(b, 0, 100, 96, 1, 0, 0, false)
	var bytes int64
	for _, p := range pkts {
		bytes += int64(len(p.Payload))
	}
	d := Depacketizer{Codec: c.Codec, ParamSets: c.ParamSets, OnAccessUnit: func(*media.AccessUnit) bool { return true }}
	if err := d.Init(); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	b.SetBytes(bytes)
	b.ReportAllocs()
	span := pkts[len(pkts)-1].Timestamp - pkts[0].Timestamp + 7200
	for b.Loop() {
		for _, p := range pkts {
			d.Push(p, t0)
			p.Timestamp += span // the next round continues the timeline
		}
	}
}

// TestDepacketizerTimestampJump makes the sender's RTP clock jump by three hours mid-stream,
// as DVRs do: PTS goes on smoothly and the jump is counted.
func TestDepacketizerTimestampJump(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	pkts := c.Packetize(t, 0, 200, 96, 1, 0, 0, false)
	var st live.Counters
	m := sourcetest.Matcher{Clip: c}
	d := Depacketizer{Codec: c.Codec, ParamSets: c.ParamSets, Stats: &st, OnAccessUnit: func(au *media.AccessUnit) bool {
		m.Check(t, au)
		return true
	}}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, p := range pkts {
		arrival := t0.Add(time.Duration(p.Timestamp) * time.Second / 90000) // real time, before the jump
		if p.Timestamp >= uint32(c.Samples[100].PTS) {
			p.Timestamp += 3 * 3600 * 90000
		}
		d.Push(p, arrival)
	}
	if m.Matched != 200 || st.TimestampJumps.Load() != 1 {
		t.Fatalf("matched %d, jumps %d", m.Matched, st.TimestampJumps.Load())
	}
}
