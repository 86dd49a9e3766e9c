package brokered

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

func TestRecordRoundTrip(t *testing.T) {
	id := event.NewID(time.Unix(1700000000, 0))
	b := AppendRecord(nil, KindEvent, id, "cam-1", "zone.enter")
	b = append(b, `{"id":"x"}`...)
	r, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindEvent || r.ID != id || string(r.Stream) != "cam-1" || string(r.Type) != "zone.enter" ||
		!bytes.Equal(r.Body, []byte(`{"id":"x"}`)) {
		t.Fatalf("decoded %+v", r)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := append(AppendRecord(nil, KindDetections, event.ID{}, "s", TypeDetections), '{', '}')
	for i := range len(good) - 2 {
		if _, err := Decode(good[:i]); !errors.Is(err, ErrRecord) {
			t.Fatalf("%d bytes: err %v", i, err)
		}
	}
	bad := bytes.Clone(good)
	bad[0] = 9
	if _, err := Decode(bad); !errors.Is(err, ErrRecord) {
		t.Fatal("version not checked")
	}
	bad = bytes.Clone(good)
	bad[1] = 'x'
	if _, err := Decode(bad); !errors.Is(err, ErrRecord) {
		t.Fatal("kind not checked")
	}
}
