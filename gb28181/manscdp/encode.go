package manscdp

import "fmt"

// Query returns a query body (§A.2.4): Catalog, DeviceInfo, ... for deviceID, sequence number
// sn. It is ASCII, declared GB2312 as devices expect.
func Query(cmd string, sn int64, deviceID string) []byte {
	return fmt.Appendf(nil, "<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>%s</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n</Query>\r\n",
		escape(cmd), sn, escape(deviceID))
}

// AlarmResponse returns the platform's answer to an Alarm notification (GB/T 28181-2016
// §9.4.2 and §A.2.6, 报警通知应答): Result OK for deviceID, the notification's sequence number sn.
func AlarmResponse(sn int64, deviceID string) []byte {
	return fmt.Appendf(nil, "<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Response>\r\n<CmdType>Alarm</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Result>OK</Result>\r\n</Response>\r\n",
		sn, escape(deviceID))
}

// escape keeps only characters that need no escaping: IDs and command names are digits and
// letters.
func escape(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-' {
			b = append(b, c)
		}
	}
	return string(b)
}
