package manscdp

import (
	"bytes"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := checkCase(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestQueryRoundTrip(t *testing.T) {
	b := Query(CmdCatalog, 12, "34020000001320000001<x>")
	if !bytes.Contains(b, []byte(`encoding="GB2312"`)) {
		t.Fatalf("%s", b)
	}
	m, err := Decode(b)
	if err != nil || m.Root != RootQuery || m.CmdType != CmdCatalog || m.SN != 12 || m.DeviceID != "34020000001320000001x" {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestAlarmResponse(t *testing.T) {
	m, err := Decode(AlarmResponse(7, "34020000001310000001"))
	if err != nil || m.Root != RootResponse || m.CmdType != CmdAlarm || m.SN != 7 || m.DeviceID != "34020000001310000001" || m.Result != "OK" {
		t.Fatalf("%+v %v", m, err)
	}
}
