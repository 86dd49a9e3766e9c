package detect

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCOCO80(t *testing.T) {
	l := COCO80()
	if len(l) != 80 || l[0] != "person" || l[16] != "dog" || l[79] != "toothbrush" {
		t.Fatalf("%d names: %q … %q", len(l), l[0], l[len(l)-1])
	}
	l[0] = "changed"
	if COCO80()[0] != "person" {
		t.Error("COCO80 shares its slice")
	}
}

func TestLoadLabels(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"plain", "cat\ndog\n", []string{"cat", "dog"}},
		{"no final newline", "cat\ndog", []string{"cat", "dog"}},
		{"crlf and spaces", "\ufeff cat \r\ntraffic light\r\n\r\n\n", []string{"cat", "traffic light"}},
		{"inner blank line kept", "a\n\nc\n", []string{"a", "", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "labels.txt")
			if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadLabels(p)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	empty := filepath.Join(dir, "empty.names")
	os.WriteFile(empty, []byte("\n \n"), 0o644)
	if _, err := LoadLabels(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := LoadLabels(filepath.Join(dir, "missing.names")); err == nil || !strings.Contains(err.Error(), "missing.names") {
		t.Errorf("missing file: %v", err)
	}
}

func TestDetectionJSON(t *testing.T) {
	d := Detection{ClassID: 16, Label: "dog", Score: 0.85512, Box: [4]float32{132.16, 206.04, 325.25, 543}}
	const want = `{"class_id":16,"label":"dog","score":0.8551,"box":[132.2,206.0,325.2,543.0]}`
	if got := string(d.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON = %s\nwant          %s", got, want)
	}
	b, err := json.Marshal([]Detection{d})
	if err != nil || string(b) != "["+want+"]" {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	// Names needing escapes, invalid UTF-8 and non-finite numbers still give valid JSON.
	odd := Detection{Label: "a\"b\\c\n\x01\xff·", Score: float32(math.NaN()), Box: [4]float32{float32(math.Inf(1))}}
	var back struct {
		Label string
		Score float32
		Box   [4]float32
	}
	if err := json.Unmarshal(odd.AppendJSON(nil), &back); err != nil {
		t.Fatalf("%s: %v", odd.AppendJSON(nil), err)
	}
	if back.Label != "a\"b\\c\n\x01\ufffd·" || back.Score != 0 || back.Box[0] != 0 {
		t.Errorf("round trip: %+v", back)
	}
	buf := make([]byte, 0, 256)
	if a := testing.AllocsPerRun(10, func() { buf = d.AppendJSON(buf[:0]) }); a != 0 {
		t.Errorf("%v allocations per AppendJSON", a)
	}
}

func TestDetectionJSONTrackID(t *testing.T) {
	cases := []struct {
		id   int64
		want string
	}{
		{0, `{"class_id":0,"label":"person","score":0.5000,"box":[1.0,2.0,3.0,4.0]}`},
		{7, `{"class_id":0,"label":"person","score":0.5000,"box":[1.0,2.0,3.0,4.0],"track_id":7}`},
		{1234567890123, `{"class_id":0,"label":"person","score":0.5000,"box":[1.0,2.0,3.0,4.0],"track_id":1234567890123}`},
	}
	for _, c := range cases {
		d := Detection{Label: "person", Score: 0.5, Box: [4]float32{1, 2, 3, 4}, TrackID: c.id}
		if got := string(d.AppendJSON(nil)); got != c.want {
			t.Errorf("track %d: AppendJSON = %s\nwant %s", c.id, got, c.want)
		}
		var back Detection
		if err := json.Unmarshal(d.AppendJSON(nil), &back); err != nil || back.TrackID != c.id {
			t.Errorf("track %d: round trip %+v, %v", c.id, back, err)
		}
	}
}
