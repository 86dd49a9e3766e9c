// Package manscdp reads and writes the MANSCDP XML bodies of GB28181 SIP MESSAGEs (GB/T
// 28181-2016 §A.2, "监控报警联网系统控制描述协议"): the Keepalive and MediaStatus notifications,
// the Alarm notification, the Catalog and DeviceInfo queries and their responses. Devices write them in GB2312 (or GBK,
// GB18030) and now and then in UTF-8; Decode accepts all of these, bounds the body's size, the
// number of catalog items and the nesting, and never expands entities (an XML bomb is refused).
package manscdp

// Root elements (GB/T 28181-2016 §A.2.1).
const (
	RootQuery    = "Query"
	RootControl  = "Control"
	RootNotify   = "Notify"
	RootResponse = "Response"
)

// Command types (CmdType, GB/T 28181-2016 §A.2.2–A.2.6).
const (
	CmdKeepalive   = "Keepalive"
	CmdCatalog     = "Catalog"
	CmdDeviceInfo  = "DeviceInfo"
	CmdMediaStatus = "MediaStatus"
	CmdAlarm       = "Alarm"
)

// MediaStatusEnd is the NotifyType of the end of a file's playback (§A.2.5.6, "121").
const MediaStatusEnd = "121"

// Message is one decoded MANSCDP body. Only the fields of the commands vinfer handles are
// kept; others are ignored.
type Message struct {
	// Root is the root element: RootQuery, RootNotify, RootResponse or RootControl.
	Root string
	// CmdType, SN and DeviceID are in every message (§A.2.1).
	CmdType  string `xml:"CmdType"`
	SN       int64  `xml:"SN"`
	DeviceID string `xml:"DeviceID"`
	// Status is the Keepalive's "OK"/"ERROR" (§A.2.5.2).
	Status string `xml:"Status"`
	// Result is a response's "OK"/"ERROR" (DeviceInfo, §A.2.6.5).
	Result string `xml:"Result"`
	// SumNum is the number of catalog items in all parts of a Catalog response (§A.2.6.4).
	SumNum int `xml:"SumNum"`
	// DeviceList holds this part's catalog items.
	DeviceList DeviceList `xml:"DeviceList"`
	// DeviceInfo response fields (§A.2.6.5).
	DeviceName   string `xml:"DeviceName"`
	Manufacturer string `xml:"Manufacturer"`
	Model        string `xml:"Model"`
	Firmware     string `xml:"Firmware"`
	Channel      int    `xml:"Channel"`
	// NotifyType of a MediaStatus notification (§A.2.5.6).
	NotifyType string `xml:"NotifyType"`
	// An alarm subscription's filter (§A.2.4.6): priorities StartAlarmPriority …
	// EndAlarmPriority (0: any) and AlarmMethod, the methods' digits ("5", "25"; "" or "0":
	// any).
	StartAlarmPriority, EndAlarmPriority int
	// AlarmMethod is the subscription's filter above, or an alarm notification's method.
	AlarmMethod string `xml:"AlarmMethod"`
	// Alarm notification fields (§A.2.5.5): priority 1 (highest) to 4, method 1 (phone) to 7
	// (other; 2 device, 5 video), time as the device wrote it (ISO 8601 local), free text.
	AlarmPriority    string `xml:"AlarmPriority"`
	AlarmTime        string `xml:"AlarmTime"`
	AlarmDescription string `xml:"AlarmDescription"`
	// AlarmInfo is an alarm notification's Info: its AlarmType (§A.2.5.5; per method, e.g.
	// video 2 motion) and AlarmTypeParam/EventType ("": none).
	AlarmInfo AlarmInfo `xml:"Info"`
	// A RecordInfo query's range and Type (§A.2.4.5): times as written
	// ("2006-01-02T15:04:05", local), Type time, alarm, manual or all ("": all).
	StartTime string `xml:"StartTime"`
	EndTime   string `xml:"EndTime"`
	Type      string `xml:"Type"`
}

// AlarmInfo is the Info element of an Alarm notification (GB/T 28181-2016 §A.2.5.5).
// Both are kept as written (digits) so that a malformed one spoils only itself.
type AlarmInfo struct {
	AlarmType string `xml:"AlarmType"`
	EventType string `xml:"AlarmTypeParam>EventType"`
}

// WantsAlarm reports whether an alarm subscription with m's filter wants an alarm of priority
// and method (1 … 7).
func (m *Message) WantsAlarm(priority, method int) bool {
	if m.StartAlarmPriority > 0 && priority < m.StartAlarmPriority || m.EndAlarmPriority > 0 && priority > m.EndAlarmPriority {
		return false
	}
	if m.AlarmMethod == "" || m.AlarmMethod == "0" {
		return true
	}
	for _, c := range m.AlarmMethod {
		if int(c-'0') == method {
			return true
		}
	}
	return false
}

// DeviceList is a Catalog response's list of items.
type DeviceList struct {
	Num   int    `xml:"Num,attr"`
	Items []Item `xml:"Item"`
}

// Item is one catalog entry (§A.2.6.4): a channel (camera), or an organisation node.
type Item struct {
	DeviceID     string `xml:"DeviceID" json:"id"`
	Name         string `xml:"Name" json:"name"`
	Manufacturer string `xml:"Manufacturer" json:"manufacturer,omitempty"`
	Model        string `xml:"Model" json:"model,omitempty"`
	Owner        string `xml:"Owner" json:"owner,omitempty"`
	CivilCode    string `xml:"CivilCode" json:"civil_code,omitempty"`
	Address      string `xml:"Address" json:"address,omitempty"`
	Parental     int    `xml:"Parental" json:"parental,omitempty"`
	ParentID     string `xml:"ParentID" json:"parent_id,omitempty"`
	// Status is "ON"/"OFF" (2016) or "ONLINE"/"OFFLINE" (some devices).
	Status    string  `xml:"Status" json:"status"`
	Longitude float64 `xml:"Longitude" json:"longitude,omitempty"`
	Latitude  float64 `xml:"Latitude" json:"latitude,omitempty"`
}

// Online reports whether the item's Status says it is on.
func (it *Item) Online() bool {
	switch it.Status {
	case "ON", "On", "on", "ONLINE", "Online", "online", "OK":
		return true
	}
	return false
}
