package manscdp

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// CmdRecordInfo is the query of a channel's recordings (GB/T 28181-2016 §A.2.4.5) and its
// response (§A.2.6.7).
const CmdRecordInfo = "RecordInfo"

// RecordTypeTime is the Type of continuous (time-scheduled) recordings (§A.2.4.5: time,
// alarm, manual, all).
const RecordTypeTime = "time"

// ErrRecordRange: a RecordInfo query's StartTime or EndTime is missing or unreadable, or
// the end is not after the start.
var ErrRecordRange = errors.New("manscdp: RecordInfo StartTime/EndTime missing or bad")

// RecordRange returns a RecordInfo query's [StartTime, EndTime] (local time as the standard
// writes it, "2006-01-02T15:04:05"). Errors: ErrRecordRange.
func RecordRange(m *Message) (from, to time.Time, err error) {
	from, err1 := time.ParseInLocation(alarmTimeLayout, strings.TrimSpace(m.StartTime), time.Local)
	to, err2 := time.ParseInLocation(alarmTimeLayout, strings.TrimSpace(m.EndTime), time.Local)
	if err1 != nil || err2 != nil || !to.After(from) {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: %.32q … %.32q", ErrRecordRange, m.StartTime, m.EndTime)
	}
	return from, to, nil
}

// RecordItem is one recording of a RecordInfo response: a span of continuous video.
type RecordItem struct {
	Start, End time.Time
}

// RecordInfoResponse returns one part of the RecordInfo response to query sn (§A.2.6.7) for
// channel deviceID named name: sum items in all parts, these items (Type time, Secrecy 0,
// FilePath the channel's ID), times in local time without zone.
func RecordInfoResponse(sn int64, deviceID, name string, sum int, items []RecordItem) []byte {
	b := fmt.Appendf(nil, xmlHead+"<Response>\r\n<CmdType>RecordInfo</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Name>%s</Name>\r\n<SumNum>%d</SumNum>\r\n<RecordList Num=\"%d\">\r\n",
		sn, escape(deviceID), text(name), sum, len(items))
	for _, it := range items {
		b = fmt.Appendf(b, "<Item>\r\n<DeviceID>%s</DeviceID>\r\n<Name>%s</Name>\r\n<FilePath>%s</FilePath>\r\n<Address>vinfer</Address>\r\n<StartTime>%s</StartTime>\r\n<EndTime>%s</EndTime>\r\n<Secrecy>0</Secrecy>\r\n<Type>time</Type>\r\n</Item>\r\n",
			escape(deviceID), text(name), escape(deviceID), it.Start.Local().Format(alarmTimeLayout), it.End.Local().Format(alarmTimeLayout))
	}
	return gb(append(b, "</RecordList>\r\n</Response>\r\n"...))
}

// MediaStatusNotify returns the notification that a playback or download of channel
// deviceID reached the end of its range (§A.2.5.6: NotifyType 121), sent in the INVITE's
// Call-ID.
func MediaStatusNotify(sn int64, deviceID string) []byte {
	return fmt.Appendf(nil, xmlHead+"<Notify>\r\n<CmdType>MediaStatus</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<NotifyType>%s</NotifyType>\r\n</Notify>\r\n",
		sn, escape(deviceID), MediaStatusEnd)
}
