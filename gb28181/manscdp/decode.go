package manscdp

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// Limits of Decode.
const (
	// MaxSize bounds a body: a catalog part of a few hundred items fits many times over
	// (devices send catalogs in parts, SumNum giving the total).
	MaxSize = 256 << 10
	// MaxItems bounds the items of one catalog part.
	MaxItems = 2000
	// MaxDepth bounds the element nesting.
	MaxDepth = 16
)

// Decode errors.
var (
	ErrTooLarge = errors.New("manscdp: body too large")
	ErrEntity   = errors.New("manscdp: DTD or entity declaration refused")
	ErrSyntax   = errors.New("manscdp: malformed XML")
	ErrRoot     = errors.New("manscdp: root element must be Query, Control, Notify or Response")
	ErrNoCmd    = errors.New("manscdp: CmdType missing")
	ErrCharset  = errors.New("manscdp: unsupported encoding")
)

// Decode parses a MANSCDP body. The encoding is the XML declaration's (GB2312, GBK, GB18030 or
// UTF-8); without one, UTF-8 when the bytes are valid UTF-8, else GB18030 (a superset of GBK
// and GB2312), which is what devices that omit it mean. Errors wrap the sentinels above.
func Decode(b []byte) (*Message, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(b), MaxSize)
	}
	if bytes.Contains(b, []byte("<!")) && (bytes.Contains(b, []byte("<!DOCTYPE")) || bytes.Contains(b, []byte("<!ENTITY"))) {
		return nil, ErrEntity
	}
	var r io.Reader = bytes.NewReader(b)
	if !declaresEncoding(b) && !utf8.Valid(b) {
		r = simplifiedchinese.GB18030.NewDecoder().Reader(r)
	}
	d := xml.NewDecoder(r)
	d.CharsetReader = charsetReader
	d.Strict = true
	var (
		m     Message
		depth int
		root  bool
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, ErrCharset) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return nil, ErrEntity
		case xml.StartElement:
			if root {
				return nil, fmt.Errorf("%w: a second root element", ErrSyntax)
			}
			switch t.Name.Local {
			case RootQuery, RootControl, RootNotify, RootResponse:
			default:
				return nil, fmt.Errorf("%w, not %.32q", ErrRoot, t.Name.Local)
			}
			m.Root = t.Name.Local
			if err := decodeBody(d, &m, &depth); err != nil {
				return nil, err
			}
			root = true
		}
	}
	if !root {
		return nil, fmt.Errorf("%w: no root element", ErrSyntax)
	}
	m.CmdType = strings.TrimSpace(m.CmdType)
	m.DeviceID = strings.TrimSpace(m.DeviceID)
	if m.CmdType == "" {
		return nil, ErrNoCmd
	}
	if len(m.DeviceList.Items) > MaxItems {
		return nil, fmt.Errorf("%w: %d catalog items, at most %d", ErrTooLarge, len(m.DeviceList.Items), MaxItems)
	}
	return &m, nil
}

// nextChild returns the start of the next child element; ok is false at the parent's end
// (err nil) or on an error: ErrSyntax for malformed XML, ErrEntity for a directive (DTD).
func nextChild(d *xml.Decoder) (start xml.StartElement, ok bool, err error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return start, false, fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return start, false, nil
		case xml.Directive:
			return start, false, ErrEntity
		case xml.StartElement:
			return t, true, nil
		}
	}
}

// decodeBody reads the root element's children into m, item by item so that the limits hold
// while reading.
func decodeBody(d *xml.Decoder, m *Message, depth *int) error {
	for {
		t, ok, err := nextChild(d)
		if !ok {
			return err
		}
		if t.Name.Local == "DeviceList" {
			if err := decodeList(d, t, m); err != nil {
				return err
			}
			continue
		}
		if t.Name.Local == "Info" {
			if err := decodeInfo(d, &m.AlarmInfo, 2); err != nil {
				return err
			}
			continue
		}
		var v string
		if err := decodeText(d, &v, 1); err != nil {
			return err
		}
		setField(m, t.Name.Local, strings.TrimSpace(v))
	}
}

func decodeList(d *xml.Decoder, start xml.StartElement, m *Message) error {
	for _, a := range start.Attr {
		if a.Name.Local == "Num" {
			fmt.Sscan(a.Value, &m.DeviceList.Num)
		}
	}
	for {
		t, ok, err := nextChild(d)
		if !ok {
			return err
		}
		if t.Name.Local != "Item" {
			if err := d.Skip(); err != nil {
				return fmt.Errorf("%w: %v", ErrSyntax, err)
			}
			continue
		}
		if len(m.DeviceList.Items) >= MaxItems {
			return fmt.Errorf("%w: more than %d catalog items", ErrTooLarge, MaxItems)
		}
		var it Item
		if err := decodeItem(d, &it); err != nil {
			return err
		}
		m.DeviceList.Items = append(m.DeviceList.Items, it)
	}
}

func decodeItem(d *xml.Decoder, it *Item) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			var v string
			if err := decodeText(d, &v, 3); err != nil {
				return err
			}
			v = strings.TrimSpace(v)
			switch t.Name.Local {
			case "DeviceID":
				it.DeviceID = v
			case "Name":
				it.Name = v
			case "Manufacturer":
				it.Manufacturer = v
			case "Model":
				it.Model = v
			case "Owner":
				it.Owner = v
			case "CivilCode":
				it.CivilCode = v
			case "Address":
				it.Address = v
			case "Parental":
				fmt.Sscan(v, &it.Parental)
			case "ParentID":
				it.ParentID = v
			case "Status":
				it.Status = v
			case "Longitude":
				fmt.Sscan(v, &it.Longitude)
			case "Latitude":
				fmt.Sscan(v, &it.Latitude)
			}
		}
	}
}

// decodeInfo reads an Alarm notification's Info (§A.2.5.5): AlarmType, and EventType inside
// AlarmTypeParam; other elements are skipped.
func decodeInfo(d *xml.Decoder, in *AlarmInfo, depth int) error {
	for {
		t, ok, err := nextChild(d)
		if !ok {
			return err
		}
		switch t.Name.Local {
		case "AlarmTypeParam":
			if depth >= MaxDepth {
				return fmt.Errorf("%w: nesting deeper than %d", ErrTooLarge, MaxDepth)
			}
			err = decodeInfo(d, in, depth+1)
		case "AlarmType":
			err = decodeText(d, &in.AlarmType, depth)
		case "EventType":
			err = decodeText(d, &in.EventType, depth)
		default:
			err = decodeText(d, new(string), depth)
		}
		if err != nil {
			return err
		}
	}
}

// decodeText reads the text of the element just started, skipping nested elements up to
// MaxDepth.
func decodeText(d *xml.Decoder, v *string, depth int) error {
	var sb strings.Builder
	level := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSyntax, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if level == 0 && sb.Len() < 4096 {
				sb.Write(t)
			}
		case xml.StartElement:
			level++
			if depth+level > MaxDepth {
				return fmt.Errorf("%w: nesting deeper than %d", ErrTooLarge, MaxDepth)
			}
		case xml.EndElement:
			if level == 0 {
				*v = sb.String()
				return nil
			}
			level--
		case xml.Directive:
			return ErrEntity
		}
	}
}

func setField(m *Message, name, v string) {
	switch name {
	case "CmdType":
		m.CmdType = v
	case "SN":
		fmt.Sscan(v, &m.SN)
	case "DeviceID":
		m.DeviceID = v
	case "Status":
		m.Status = v
	case "Result":
		m.Result = v
	case "SumNum":
		fmt.Sscan(v, &m.SumNum)
	case "DeviceName":
		m.DeviceName = v
	case "Manufacturer":
		m.Manufacturer = v
	case "Model":
		m.Model = v
	case "Firmware":
		m.Firmware = v
	case "Channel":
		fmt.Sscan(v, &m.Channel)
	case "NotifyType":
		m.NotifyType = v
	case "StartAlarmPriority":
		fmt.Sscan(v, &m.StartAlarmPriority)
	case "EndAlarmPriority":
		fmt.Sscan(v, &m.EndAlarmPriority)
	case "AlarmMethod":
		m.AlarmMethod = strings.TrimSpace(v)
	case "AlarmPriority":
		m.AlarmPriority = v
	case "AlarmTime":
		m.AlarmTime = v
	case "AlarmDescription":
		m.AlarmDescription = v
	case "StartTime":
		m.StartTime = v
	case "EndTime":
		m.EndTime = v
	case "Type":
		m.Type = v
	}
}

// declaresEncoding reports whether the body starts with an XML declaration naming an encoding.
func declaresEncoding(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n\ufeff")
	if !bytes.HasPrefix(b, []byte("<?xml")) {
		return false
	}
	end := bytes.Index(b, []byte("?>"))
	return end > 0 && bytes.Contains(b[:end], []byte("encoding"))
}

func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "gb2312", "gbk", "gb18030", "cp936", "x-gbk", "euc-cn":
		return simplifiedchinese.GB18030.NewDecoder().Reader(in), nil
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	}
	return nil, fmt.Errorf("%w: %.32q", ErrCharset, label)
}
