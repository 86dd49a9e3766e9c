package sdp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func check(c answerCase) (string, bool) {
	a, err := ParseAnswer([]byte(c.body))
	if c.err != nil {
		return "error " + errString(err), errors.Is(err, c.err)
	}
	if err != nil {
		return err.Error(), false
	}
	got, want := *a, c.want
	got.PayloadTypes = nil
	return "", got.IP == want.IP && got.Port == want.Port && got.TCP == want.TCP && got.Setup == want.Setup &&
		got.SSRC == want.SSRC && got.HasSSRC == want.HasSSRC
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func TestParseAnswer(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if msg, ok := check(c); !ok {
				t.Fatalf("%s (want %+v / %v)", msg, c.want, c.err)
			}
		})
	}
	a, _ := ParseAnswer([]byte(cases[0].body))
	if a.PayloadTypes[96] != "PS" {
		t.Fatalf("rtpmap %v", a.PayloadTypes)
	}
}

// TestOfferAnswer: the offer vinfer writes parses back with its own answer parser.
func TestOfferAnswer(t *testing.T) {
	for _, tr := range []string{TransportUDP, TransportTCPPassive, TransportTCPActive} {
		o := Offer{Origin: "34020000002000000001", IP: netip.MustParseAddr("192.0.2.7"), Port: 30002, Transport: tr, SSRC: "0200000001"}
		b := o.Marshal()
		a, err := ParseAnswer(b)
		if err != nil || a.IP != o.IP || a.Port != 30002 || a.SSRC != 200000001 || a.TCP != (tr != TransportUDP) {
			t.Fatalf("%s: %+v %v\n%s", tr, a, err, b)
		}
		if want := map[string]string{TransportUDP: "", TransportTCPPassive: "passive", TransportTCPActive: "active"}[tr]; a.Setup != want {
			t.Fatalf("%s: setup %q", tr, a.Setup)
		}
		if !strings.Contains(string(b), "s=Play\r\n") || !strings.HasSuffix(string(b), "y=0200000001\r\n") {
			t.Fatalf("%s", b)
		}
	}
}

func TestSSRC(t *testing.T) {
	a := SSRCAllocator{Domain: "3402000000"}
	if err := a.Init(); err != nil {
		t.Fatal(err)
	}
	s1, _ := a.Live()
	s2, _ := a.Live()
	if s1.String() != "0200000001" || s2.String() != "0200000002" {
		t.Fatalf("%s %s", s1, s2)
	}
	a.Release(s1)
	for range 9997 {
		if _, err := a.Live(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := a.Live() // only the released one is left
	if err != nil || s != s1 {
		t.Fatalf("%s %v", s, err)
	}
	if _, err := a.Live(); !errors.Is(err, ErrSSRCExhausted) {
		t.Fatal(err)
	}
	if (&SSRCAllocator{Domain: "34020"}).Init() == nil {
		t.Fatal("short domain accepted")
	}
}
