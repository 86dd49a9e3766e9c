package manscdp

import (
	"strings"
	"testing"
	"time"
)

// TestDeviceAlarm: a device's Alarm notification (§A.2.5.5, GBK) read back as an Alarm to
// forward: priority, method, Info's AlarmType and EventType, local time, description bounded;
// out-of-range priority or method refused; a malformed number spoils only itself.
func TestDeviceAlarm(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	a0 := Alarm{DeviceID: "34020000001310000001", Priority: 2, Method: 5, Type: 2, EventType: 1,
		Time: time.Date(2026, 3, 4, 5, 6, 7, 0, time.Local), Description: "移动侦测"}
	m, err := Decode(AlarmNotify(7, a0))
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := DeviceAlarm(m, now); !ok || a != a0 {
		t.Fatalf("DeviceAlarm = %+v %v, want %+v", a, ok, a0)
	}
	for _, c := range []struct {
		name, body string
		ok         bool
		check      func(Alarm) bool
	}{
		{"no time, no info", `<Notify><CmdType>Alarm</CmdType><DeviceID>1</DeviceID><AlarmPriority>4</AlarmPriority><AlarmMethod>2</AlarmMethod></Notify>`,
			true, func(a Alarm) bool { return a.Time.Equal(now) && a.Type == 0 && a.EventType == 0 }},
		{"bad type", `<Notify><CmdType>Alarm</CmdType><DeviceID>1</DeviceID><AlarmPriority>1</AlarmPriority><AlarmMethod>7</AlarmMethod><Info><AlarmType>x</AlarmType></Info></Notify>`,
			true, func(a Alarm) bool { return a.Type == 0 && a.Method == 7 }},
		{"priority 0", `<Notify><CmdType>Alarm</CmdType><DeviceID>1</DeviceID><AlarmPriority>0</AlarmPriority><AlarmMethod>5</AlarmMethod></Notify>`, false, nil},
		{"method 8", `<Notify><CmdType>Alarm</CmdType><DeviceID>1</DeviceID><AlarmPriority>1</AlarmPriority><AlarmMethod>8</AlarmMethod></Notify>`, false, nil},
		{"long description", `<Notify><CmdType>Alarm</CmdType><DeviceID>1</DeviceID><AlarmPriority>1</AlarmPriority><AlarmMethod>5</AlarmMethod><AlarmDescription>` +
			strings.Repeat("警", 200) + `</AlarmDescription></Notify>`, true, func(a Alarm) bool { return len(a.Description) == 255 && strings.Trim(a.Description, "警") == "" }},
	} {
		m, err := Decode([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, ok := DeviceAlarm(m, now)
		if ok != c.ok || ok && !c.check(a) {
			t.Fatalf("%s: %+v %v", c.name, a, ok)
		}
	}
}
