package manscdp

import (
	"strings"
	"testing"
	"time"
)

// TestLowerBodies: what a lower platform writes decodes back (names escaped, the catalog's
// parts and status, DeviceInfo), and an alarm carries method, type and event type.
func TestLowerBodies(t *testing.T) {
	m, err := Decode(CatalogResponse(7, "34020000002000000001", 3, []CatalogItem{
		{ID: "34020000001320000001", Name: `门 <"A"> & B`, ParentID: "34020000002000000001", Online: true},
		{ID: "34020000001320000002", Name: "yard"}}))
	if err != nil {
		t.Fatal(err)
	}
	if m.Root != RootResponse || m.CmdType != CmdCatalog || m.SN != 7 || m.SumNum != 3 || len(m.DeviceList.Items) != 2 ||
		m.DeviceList.Items[0].Name != `门 <"A"> & B` || !m.DeviceList.Items[0].Online() || m.DeviceList.Items[1].Online() {
		t.Fatalf("%+v", m)
	}
	if m, err = Decode(DeviceInfoResponse(8, "34020000002000000001", "vinfer & co", "1.0", 2)); err != nil || m.Channel != 2 || m.DeviceName != "vinfer & co" {
		t.Fatalf("%+v %v", m, err)
	}
	a := string(AlarmNotify(9, Alarm{DeviceID: "34020000001320000001", Priority: 2, Method: AlarmMethodVideo, Type: AlarmTypeIntrusion,
		EventType: IntrusionEventEnter, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local), Description: "zone=a<b"}))
	for _, want := range []string{"<AlarmMethod>5</AlarmMethod>", "<AlarmType>6</AlarmType>", "<EventType>1</EventType>",
		"<AlarmTime>2026-01-02T03:04:05</AlarmTime>", "zone=a&lt;b"} {
		if !strings.Contains(a, want) {
			t.Errorf("alarm lacks %s:\n%s", want, a)
		}
	}
	if _, err := Decode([]byte(a)); err != nil {
		t.Fatal(err)
	}
}

// TestWantsAlarm: an alarm subscription's filter by priority range and methods.
func TestWantsAlarm(t *testing.T) {
	q := func(start, end, method string) *Message {
		m, err := Decode([]byte("<?xml version=\"1.0\"?><Query><CmdType>Alarm</CmdType><SN>1</SN><DeviceID>1</DeviceID><StartAlarmPriority>" +
			start + "</StartAlarmPriority><EndAlarmPriority>" + end + "</EndAlarmPriority><AlarmMethod>" + method + "</AlarmMethod></Query>"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		m          *Message
		prio, meth int
		want       bool
	}{{q("1", "4", "0"), 3, 5, true}, {q("1", "2", "0"), 3, 5, false}, {q("0", "0", "25"), 3, 5, true},
		{q("0", "0", "2"), 3, 5, false}, {q("", "", ""), 4, 5, true}} {
		if got := c.m.WantsAlarm(c.prio, c.meth); got != c.want {
			t.Errorf("%+v WantsAlarm(%d, %d) = %v", c.m, c.prio, c.meth, got)
		}
	}
}
