package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// TestGB28181Devices: with a gb28181: section, a stream on gb28181://<device>/<channel> is
// accepted through the API and listed under its device, waiting for it to register; without
// the section the route answers 404 and such a stream is refused.
func TestGB28181Devices(t *testing.T) {
	const dev, ch = "34020000001320000001", "34020000001310000001"
	t.Run("without a platform", func(t *testing.T) { // first: the platform is process-wide
		plain := start(t, "")
		plain.want("GET", "/api/gb28181/devices", "", http.StatusNotFound, nil)
		plain.want("POST", "/api/streams", `{"id":"gb","model":"yolox","source":"gb28181://`+dev+`/`+ch+`"}`, http.StatusUnprocessableEntity, nil)
	})
	e := startWith(t, "", func(c *config.Config) {
		c.GB28181 = &config.GB28181{ID: "34020000002000000001", Listen: "127.0.0.1:0", MediaPorts: "47100-47110"}
	}, nil)
	e.want("POST", "/api/streams", `{"id":"gb","model":"yolox","source":"gb28181://`+dev+`/`+ch+`?transport=tcp-passive"}`, http.StatusCreated, nil)
	var info defs.GB28181Info
	body := e.want("GET", "/api/gb28181/devices", "", http.StatusOK, nil)
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != "34020000002000000001" || len(info.Devices) != 1 || info.Devices[0].ID != dev || info.Devices[0].Online ||
		len(info.Devices[0].Channels) != 1 || len(info.Devices[0].Channels[0].Streams) != 1 {
		t.Fatalf("%s", body)
	}
	if st := info.Devices[0].Channels[0].Streams[0]; st.ID != "gb" || st.State != "waiting" || st.Transport != "tcp-passive" || st.Port < 47100 {
		t.Fatalf("%+v", st)
	}

}
