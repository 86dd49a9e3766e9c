package manscdp

import (
	"errors"
	"strings"

	"golang.org/x/text/encoding/simplifiedchinese"
)

func gbk(s string) []byte {
	b, err := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(s))
	if err != nil {
		panic(err)
	}
	return b
}

// catalog4 is a Catalog response of four channels in GBK, as GB/T 28181-2016 §A.2.6.4 shows
// it (names in Chinese).
const catalog4 = `<?xml version="1.0" encoding="GB2312"?>
<Response>
<CmdType>Catalog</CmdType>
<SN>17430</SN>
<DeviceID>34020000001320000001</DeviceID>
<SumNum>4</SumNum>
<DeviceList Num="4">
<Item><DeviceID>34020000001310000001</DeviceID><Name>大门摄像机</Name><Manufacturer>Hikvision</Manufacturer><Model>IP Camera</Model><Owner>Owner</Owner><CivilCode>3402000000</CivilCode><Address>东门</Address><Parental>0</Parental><ParentID>34020000001320000001</ParentID><Status>ON</Status><Longitude>117.2</Longitude><Latitude>31.8</Latitude></Item>
<Item><DeviceID>34020000001310000002</DeviceID><Name>停车场</Name><Status>ON</Status></Item>
<Item><DeviceID>34020000001310000003</DeviceID><Name>走廊</Name><Status>OFF</Status></Item>
<Item><DeviceID>34020000001310000004</DeviceID><Name>仓库</Name><Status>ONLINE</Status></Item>
</DeviceList>
</Response>
`

type decodeCase struct {
	name  string
	body  []byte
	err   error
	check func(*Message) bool
}

// cases are the decoder's table, reused as the fuzzer's seeds.
var cases = []decodeCase{
	{"keepalive", []byte(`<?xml version="1.0"?>
<Notify>
<CmdType>Keepalive</CmdType>
<SN>43</SN>
<DeviceID>64010000001110000001</DeviceID>
<Status>OK</Status>
</Notify>`), nil, func(m *Message) bool {
		return m.Root == RootNotify && m.CmdType == CmdKeepalive && m.SN == 43 && m.DeviceID == "64010000001110000001" && m.Status == "OK"
	}},
	{"alarm GBK", gbk(`<?xml version="1.0" encoding="GB2312"?>
<Notify>
<CmdType>Alarm</CmdType>
<SN>7</SN>
<DeviceID>34020000001310000001</DeviceID>
<AlarmPriority>1</AlarmPriority>
<AlarmMethod>5</AlarmMethod>
<AlarmTime>2026-12-06T02:50:00</AlarmTime>
<AlarmDescription>移动侦测</AlarmDescription>
<Info><AlarmType>2</AlarmType></Info>
</Notify>`), nil, func(m *Message) bool {
		return m.Root == RootNotify && m.CmdType == CmdAlarm && m.SN == 7 && m.DeviceID == "34020000001310000001" &&
			m.AlarmPriority == "1" && m.AlarmMethod == "5" && m.AlarmTime == "2026-12-06T02:50:00" && m.AlarmDescription == "移动侦测"
	}},
	{"catalog GBK", gbk(catalog4), nil, func(m *Message) bool {
		it := m.DeviceList.Items
		return m.Root == RootResponse && m.CmdType == CmdCatalog && m.SumNum == 4 && m.DeviceList.Num == 4 && len(it) == 4 &&
			it[0].Name == "大门摄像机" && it[0].Address == "东门" && it[0].Longitude == 117.2 && it[0].Online() &&
			it[2].Name == "走廊" && !it[2].Online() && it[3].Online()
	}},
	{"catalog GBK undeclared", gbk(strings.Replace(catalog4, ` encoding="GB2312"`, "", 1)), nil, func(m *Message) bool {
		return len(m.DeviceList.Items) == 4 && m.DeviceList.Items[1].Name == "停车场"
	}},
	{"catalog UTF-8 declared", []byte(strings.Replace(catalog4, "GB2312", "UTF-8", 1)), nil, func(m *Message) bool {
		return m.DeviceList.Items[0].Name == "大门摄像机"
	}},
	{"device info", gbk(`<?xml version="1.0" encoding="GBK"?><Response><CmdType>DeviceInfo</CmdType><SN>7</SN><DeviceID>34020000001320000001</DeviceID><DeviceName>前端</DeviceName><Result>OK</Result><Manufacturer>Dahua</Manufacturer><Model>NVR</Model><Firmware>V2.8</Firmware><Channel>4</Channel></Response>`), nil,
		func(m *Message) bool {
			return m.CmdType == CmdDeviceInfo && m.DeviceName == "前端" && m.Manufacturer == "Dahua" && m.Channel == 4 && m.Result == "OK"
		}},
	{"media status", []byte(`<?xml version="1.0"?><Notify><CmdType>MediaStatus</CmdType><SN>8</SN><DeviceID>34020000001310000001</DeviceID><NotifyType>121</NotifyType></Notify>`), nil,
		func(m *Message) bool { return m.CmdType == CmdMediaStatus && m.NotifyType == MediaStatusEnd }},
	{"whitespace", []byte("\r\n<Notify>\n <CmdType> Keepalive </CmdType><Unknown><Deep>x</Deep></Unknown></Notify>\n"), nil,
		func(m *Message) bool { return m.CmdType == CmdKeepalive }},
	{"billion laughs", []byte(`<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><Notify><CmdType>&lol2;</CmdType></Notify>`), ErrEntity, nil},
	{"external entity", []byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><Notify><CmdType>&xxe;</CmdType></Notify>`), ErrEntity, nil},
	{"undeclared entity", []byte(`<Notify><CmdType>&lol;</CmdType></Notify>`), ErrSyntax, nil},
	{"too large", []byte("<Notify><CmdType>Keepalive</CmdType><X>" + strings.Repeat("a", MaxSize) + "</X></Notify>"), ErrTooLarge, nil},
	{"too many items", []byte("<Response><CmdType>Catalog</CmdType><DeviceList>" + strings.Repeat("<Item></Item>", MaxItems+1) + "</DeviceList></Response>"), ErrTooLarge, nil},
	{"too deep", []byte("<Notify><CmdType>Keepalive</CmdType><A>" + strings.Repeat("<a>", 40) + strings.Repeat("</a>", 40) + "</A></Notify>"), ErrTooLarge, nil},
	{"unknown root", []byte(`<Foo><CmdType>Keepalive</CmdType></Foo>`), ErrRoot, nil},
	{"no cmd", []byte(`<Notify><SN>1</SN></Notify>`), ErrNoCmd, nil},
	{"truncated", []byte(`<Notify><CmdType>Keepalive</CmdType>`), ErrSyntax, nil},
	{"empty", nil, ErrSyntax, nil},
	{"two roots", []byte(`<Notify><CmdType>Keepalive</CmdType></Notify><Notify/>`), ErrSyntax, nil},
	{"unknown charset", []byte(`<?xml version="1.0" encoding="EBCDIC"?><Notify><CmdType>Keepalive</CmdType></Notify>`), ErrCharset, nil},
}

func checkCase(c decodeCase) error {
	m, err := Decode(c.body)
	if c.err != nil {
		if !errors.Is(err, c.err) {
			return errors.Join(errors.New("want "+c.err.Error()), err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !c.check(m) {
		return errors.New("decoded fields differ")
	}
	return nil
}
