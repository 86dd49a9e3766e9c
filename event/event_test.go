package event

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
)

var testTime = time.Date(2026, 3, 1, 12, 0, 0, 123_456_789, time.UTC)

// sampleEvents returns one event of every type, with the fields that type carries.
func sampleEvents() []Event {
	g := NewGenerator([32]byte{7})
	base := Event{
		Stream: "lobby", Frame: 1234, PTS: 41*time.Second + 200*time.Millisecond, Time: testTime,
		TrackID: 17, ClassID: 0, Label: "person", Score: 0.8812, Box: [4]float32{408.7, 0, 561.8, 400.3},
	}
	var out []Event
	for _, ty := range Types {
		e := base
		e.Type = ty
		e.ID = g.New(testTime)
		switch ty {
		case LineCross:
			e.Line, e.Direction = "door", In
		case ZoneEnter:
			e.Zone = "table"
		case ZoneLeave, ZoneLoiter:
			e.Zone, e.Dwell = "table", 12*time.Second+500*time.Millisecond
		}
		out = append(out, e)
	}
	out[1].Direction, out[1].Line = NoDirection, ""
	return out
}

func TestAppendJSONGolden(t *testing.T) {
	e := sampleEvents()[2]
	e.ID, _ = ParseID("01JNX7Q2M8C3Z5V6W7Y8Z9ABCD")
	got := string(e.AppendJSON(nil))
	want := `{"id":"01JNX7Q2M8C3Z5V6W7Y8Z9ABCD","type":"zone.leave","stream":"lobby","frame":1234,"pts":41.2,"time":"2026-03-01T12:00:00.123Z","track_id":17,"class_id":0,"label":"person","score":0.8812,"box":[408.7,0.0,561.8,400.3],"zone":"table","dwell":12.5}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	cross := sampleEvents()[0]
	cross.ID = e.ID
	cross.Direction = Out
	got = string(cross.AppendJSON(nil))
	want = `{"id":"01JNX7Q2M8C3Z5V6W7Y8Z9ABCD","type":"line.cross","stream":"lobby","frame":1234,"pts":41.2,"time":"2026-03-01T12:00:00.123Z","track_id":17,"class_id":0,"label":"person","score":0.8812,"box":[408.7,0.0,561.8,400.3],"line":"door","direction":"out"}`
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	odd := sampleEvents()[4]
	odd.Stream, odd.Label = "cam \"7\"\n\\é", ""
	odd.PTS = 123456789 * time.Nanosecond * 11 // 90 kHz-like, not a round number
	odd.TrackID = -1 << 40
	odd.Time = time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("x", 3600))
	for _, e := range append(sampleEvents(), odd) {
		b := e.AppendJSON(nil)
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		want := e
		want.Time = e.Time.Truncate(time.Millisecond).UTC()
		if !back.Time.Equal(want.Time) {
			t.Fatalf("%s: time %v, want %v", e.Type, back.Time, want.Time)
		}
		back.Time = want.Time
		if back != want {
			t.Fatalf("%s:\n got %+v\nwant %+v", b, back, want)
		}
		if again := back.AppendJSON(nil); string(again) != string(b) {
			t.Fatalf("re-encoded\n%s\n%s", again, b)
		}
		m, _ := json.Marshal(e)
		if string(m) != string(b) {
			t.Fatalf("MarshalJSON differs: %s", m)
		}
	}
}

func TestAppendJSONNonFinite(t *testing.T) {
	e := sampleEvents()[4]
	e.Score = float32(math.NaN())
	e.Box[2] = float32(math.Inf(1))
	var back Event
	if err := json.Unmarshal(e.AppendJSON(nil), &back); err != nil {
		t.Fatal(err)
	}
	if back.Score != 0 || back.Box[2] != 0 {
		t.Fatalf("%v %v", back.Score, back.Box)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good := sampleEvents()[0].AppendJSON(nil)
	var m map[string]any
	_ = json.Unmarshal(good, &m)
	for _, key := range []string{"id", "type", "stream", "frame", "pts", "time", "track_id", "class_id", "label", "score", "box", "line", "direction"} {
		c := map[string]any{}
		for k, v := range m {
			if k != key {
				c[k] = v
			}
		}
		b, _ := json.Marshal(c)
		var e Event
		if err := json.Unmarshal(b, &e); !errors.Is(err, ErrMissing) {
			t.Errorf("without %s: %v", key, err)
		}
	}
	bad := []struct {
		key  string
		val  any
		want error
	}{
		{"type", "zone.exit", ErrType},
		{"direction", "up", ErrDirection},
		{"id", "01ARZ3NDEK", ErrID},
	}
	for _, c := range bad {
		m2 := map[string]any{}
		for k, v := range m {
			m2[k] = v
		}
		m2[c.key] = c.val
		b, _ := json.Marshal(m2)
		var e Event
		if err := json.Unmarshal(b, &e); !errors.Is(err, c.want) {
			t.Errorf("%s=%v: %v", c.key, c.val, err)
		}
	}
	leave := sampleEvents()[2].AppendJSON(nil)
	var lm map[string]any
	_ = json.Unmarshal(leave, &lm)
	for _, key := range []string{"zone", "dwell"} {
		c := map[string]any{}
		for k, v := range lm {
			if k != key {
				c[k] = v
			}
		}
		b, _ := json.Marshal(c)
		var e Event
		if err := json.Unmarshal(b, &e); !errors.Is(err, ErrMissing) {
			t.Errorf("zone.leave without %s: %v", key, err)
		}
	}
	var e Event
	if err := json.Unmarshal([]byte(`{"id":1}`), &e); err == nil {
		t.Error("wrong JSON type accepted")
	}
}

func TestAppendJSONAllocs(t *testing.T) {
	evs := sampleEvents()
	b := make([]byte, 0, 4096)
	n := testing.AllocsPerRun(100, func() {
		b = b[:0]
		for i := range evs {
			b = evs[i].AppendJSON(b)
			b = append(b, '\n')
		}
	})
	if n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := sampleEvents()[2]
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
	}
}
