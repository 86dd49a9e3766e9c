package gb28181

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
)

type fakeSignaller struct{ got Channel }

func (f *fakeSignaller) OpenChannel(id string, ch Channel) (source.Source, error) {
	f.got = ch
	return nil, errors.New("fake")
}

func TestParseChannel(t *testing.T) {
	const dev, ch = "34020000001320000001", "34020000001310000001"
	for _, c := range []struct {
		url  string
		want Channel
		ok   bool
	}{
		{"gb28181://" + dev + "/" + ch, Channel{dev, ch, TransportUDP}, true},
		{"gb28181://" + dev + "/" + ch + "?transport=tcp-passive", Channel{dev, ch, TransportTCPPassive}, true},
		{"gb28181://" + dev + "/" + ch + "?transport=tcp-active", Channel{dev, ch, TransportTCPActive}, true},
		{"gb28181://" + dev + "/" + ch + "?transport=sctp", Channel{}, false},
		{"gb28181://" + dev + "/" + ch + "?ssrc=1", Channel{}, false},
		{"gb28181://" + dev + "/123", Channel{}, false},
		{"gb28181://" + dev, Channel{}, false},
	} {
		if !IsSignalling(c.url) {
			t.Fatalf("%s: not seen as signalling mode", c.url)
		}
		got, err := ParseChannel(c.url)
		if (err == nil) != c.ok || got != c.want {
			t.Fatalf("%s: %+v %v", c.url, got, err)
		}
	}
	for _, media := range []string{"gb28181://:30000", "gb28181://127.0.0.1:30000?ssrc=1", "gb28181://" + dev + ":5060/" + ch} {
		if IsSignalling(media) {
			t.Fatalf("%s taken for signalling mode", media)
		}
	}
}

func TestOpenSignalling(t *testing.T) {
	s := &config.Stream{ID: "cam", Source: "gb28181://34020000001320000001/34020000001310000001?transport=tcp-active"}
	if _, err := openStream(s, source.Policy{}); !errors.Is(err, ErrNoSignalling) {
		t.Fatalf("without a platform: %v", err)
	}
	f := &fakeSignaller{}
	defer SetSignaller(f)()
	if _, err := openStream(s, source.Policy{}); err == nil || f.got.Transport != TransportTCPActive || f.got.ChannelID != "34020000001310000001" {
		t.Fatalf("%v %+v", err, f.got)
	}
}
