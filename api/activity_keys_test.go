package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
)

// TestActivityKeyFramesStop: a stream whose key frames stop coming (one IDR, then 20 s of
// P-frames: an open GOP, a lost IDR) with mode idle never goes idle: it falls back to
// decoding every frame and activity_state.idle_off says why.
func TestActivityKeyFramesStop(t *testing.T) {
	clip := stillClipGOP(t, 20, 1000)
	e := start(t, "")
	if err := e.app.AddStream(config.Stream{ID: "nokeys", Source: clip, Model: "yolox",
		Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second), MaxGOP: config.Duration(2 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	var v api.StreamView
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		e.want("GET", "/api/streams/nokeys", "", 200, &v)
		if v.State == "ended" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("stream not ended: %+v", v)
		}
	}
	a := v.ActivityState
	if a == nil || !strings.Contains(a.IdleOff, "no key frame for") || !strings.Contains(a.IdleOff, "decoding every frame") ||
		a.KeyFrameProbes != 0 || v.Decoded != 200 {
		t.Fatalf("decoded %d, activity %+v: want every frame decoded and idle_off saying the key frames stopped", v.Decoded, a)
	}
}
