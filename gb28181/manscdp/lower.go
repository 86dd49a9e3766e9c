package manscdp

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// Bodies a lower platform (vinfer cascading upward) writes: keepalives, query responses and
// alarms. All are XML declared GB2312 as platforms expect and encoded in GB18030 (the same
// bytes as GB2312 for its characters; any other character still encodes); names and
// descriptions are escaped.

// More command types.
const (
	CmdDeviceStatus = "DeviceStatus"
)

// Alarm methods and video alarm types (GB/T 28181-2016 §A.2.5.4, Table A.1/A.2).
const (
	AlarmMethodVideo    = 5 // 视频报警
	AlarmTypeTripwire   = 5 // 绊线检测
	AlarmTypeIntrusion  = 6 // 入侵检测
	AlarmTypeLoitering  = 8 // 徘徊检测
	IntrusionEventEnter = 1 // AlarmTypeParam/EventType of an intrusion: 进入区域
	IntrusionEventLeave = 2 // 离开区域
	alarmTimeLayout     = "2006-01-02T15:04:05"
	xmlHead             = "<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n"
)

// gb encodes a UTF-8 body in GB18030.
func gb(b []byte) []byte {
	out, err := simplifiedchinese.GB18030.NewEncoder().Bytes(b)
	if err != nil { // not valid UTF-8: cannot happen with escaped text
		return b
	}
	return out
}

func text(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Keepalive returns a Keepalive notification (§A.2.5.2) of deviceID.
func Keepalive(sn int64, deviceID string) []byte {
	return fmt.Appendf(nil, xmlHead+"<Notify>\r\n<CmdType>Keepalive</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Status>OK</Status>\r\n</Notify>\r\n",
		sn, escape(deviceID))
}

// CatalogItem is a channel of a Catalog response written by a lower platform.
type CatalogItem struct {
	ID, Name, ParentID string
	Online             bool
}

// CatalogResponse returns one part of a Catalog response (§A.2.6.4): sum items in all parts,
// this part's items.
func CatalogResponse(sn int64, deviceID string, sum int, items []CatalogItem) []byte {
	b := fmt.Appendf(nil, xmlHead+"<Response>\r\n<CmdType>Catalog</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<SumNum>%d</SumNum>\r\n<DeviceList Num=\"%d\">\r\n",
		sn, escape(deviceID), sum, len(items))
	for _, it := range items {
		status := "OFF"
		if it.Online {
			status = "ON"
		}
		b = fmt.Appendf(b, "<Item>\r\n<DeviceID>%s</DeviceID>\r\n<Name>%s</Name>\r\n<Manufacturer>vinfer</Manufacturer>\r\n<Model>vinfer</Model>\r\n<Owner>vinfer</Owner>\r\n<CivilCode>%s</CivilCode>\r\n<Address>vinfer</Address>\r\n<Parental>0</Parental>\r\n<ParentID>%s</ParentID>\r\n<SafetyWay>0</SafetyWay>\r\n<RegisterWay>1</RegisterWay>\r\n<Secrecy>0</Secrecy>\r\n<Status>%s</Status>\r\n</Item>\r\n",
			escape(it.ID), text(it.Name), escape(it.ID[:min(6, len(it.ID))]), escape(it.ParentID), status)
	}
	return gb(append(b, "</DeviceList>\r\n</Response>\r\n"...))
}

// DeviceInfoResponse returns a DeviceInfo response (§A.2.6.5) of deviceID with channels
// channels.
func DeviceInfoResponse(sn int64, deviceID, name, firmware string, channels int) []byte {
	return gb(fmt.Appendf(nil, xmlHead+"<Response>\r\n<CmdType>DeviceInfo</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<DeviceName>%s</DeviceName>\r\n<Result>OK</Result>\r\n<Manufacturer>vinfer</Manufacturer>\r\n<Model>vinfer</Model>\r\n<Firmware>%s</Firmware>\r\n<Channel>%d</Channel>\r\n</Response>\r\n",
		sn, escape(deviceID), text(name), text(firmware), channels))
}

// DeviceStatusResponse returns a DeviceStatus response (§A.2.6.6) of deviceID (the lower
// platform or one channel) at now.
func DeviceStatusResponse(sn int64, deviceID string, online bool, now time.Time) []byte {
	on, st := "ONLINE", "OK"
	if !online {
		on, st = "OFFLINE", "ERROR"
	}
	return fmt.Appendf(nil, xmlHead+"<Response>\r\n<CmdType>DeviceStatus</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Result>OK</Result>\r\n<Online>%s</Online>\r\n<Status>%s</Status>\r\n<Encode>ON</Encode>\r\n<Record>OFF</Record>\r\n<DeviceTime>%s</DeviceTime>\r\n<Alarmstatus Num=\"0\">\r\n</Alarmstatus>\r\n</Response>\r\n",
		sn, escape(deviceID), on, st, now.Format(alarmTimeLayout))
}

// Alarm is one alarm notification (§A.2.5.4).
type Alarm struct {
	// DeviceID is the alarming channel.
	DeviceID string
	// Priority is 1 (highest) … 4; Method AlarmMethod*; Type AlarmType*; EventType the
	// AlarmTypeParam/EventType (intrusion: IntrusionEvent*; 0: none written).
	Priority, Method, Type, EventType int
	// Time is when it happened, written in local time without zone as the standard's
	// examples do.
	Time time.Time
	// Description is free text (zone or line, class, snapshot URL).
	Description string
}

// AlarmNotify returns the alarm as a Notify body (§A.2.5.4; the same body in a MESSAGE or,
// for a subscriber, in a NOTIFY).
func AlarmNotify(sn int64, a Alarm) []byte {
	b := fmt.Appendf(nil, xmlHead+"<Notify>\r\n<CmdType>Alarm</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<AlarmPriority>%d</AlarmPriority>\r\n<AlarmMethod>%d</AlarmMethod>\r\n<AlarmTime>%s</AlarmTime>\r\n<AlarmDescription>%s</AlarmDescription>\r\n<Info>\r\n<AlarmType>%d</AlarmType>\r\n",
		sn, escape(a.DeviceID), a.Priority, a.Method, a.Time.Local().Format(alarmTimeLayout), text(a.Description), a.Type)
	if a.EventType != 0 {
		b = fmt.Appendf(b, "<AlarmTypeParam>\r\n<EventType>%d</EventType>\r\n</AlarmTypeParam>\r\n", a.EventType)
	}
	return gb(append(b, "</Info>\r\n</Notify>\r\n"...))
}

// Response returns a bare response (the answer to an alarm subscription, §9.11): result "OK"
// or "ERROR".
func Response(cmd string, sn int64, deviceID, result string) []byte {
	return fmt.Appendf(nil, xmlHead+"<Response>\r\n<CmdType>%s</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Result>%s</Result>\r\n</Response>\r\n",
		escape(cmd), sn, escape(deviceID), escape(result))
}

// maxAlarmDescription bounds a forwarded alarm's description, in bytes.
const maxAlarmDescription = 256

// DeviceAlarm returns the Alarm of a device's Alarm notification m (GB/T 28181-2016
// §A.2.5.5) as received, to forward: its channel, priority, method, type and event type, time (local,
// as devices write it; now when missing or unreadable) and description (256 bytes at most). Numbers that are
// not digits are 0; ok false when the priority or method is outside 1…4 / 1…7.
func DeviceAlarm(m *Message, now time.Time) (a Alarm, ok bool) {
	num := func(s string) int {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	a = Alarm{DeviceID: m.DeviceID, Priority: num(m.AlarmPriority), Method: num(m.AlarmMethod),
		Type: num(m.AlarmInfo.AlarmType), EventType: num(m.AlarmInfo.EventType), Time: now, Description: m.AlarmDescription}
	if t, err := time.ParseInLocation(alarmTimeLayout, strings.TrimSpace(m.AlarmTime), time.Local); err == nil {
		a.Time = t
	}
	if len(a.Description) > maxAlarmDescription { // a character cut in two is left out
		a.Description = strings.ToValidUTF8(a.Description[:maxAlarmDescription], "")
	}
	return a, a.Priority >= 1 && a.Priority <= 4 && a.Method >= 1 && a.Method <= 7
}
