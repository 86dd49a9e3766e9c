package onvifmeta

import (
	"strconv"
	"strings"
	"time"
)

// XML namespaces of a metadata document (ONVIF schema, WS-BaseNotification, ONVIF topics).
const (
	NSSchema = "http://www.onvif.org/ver10/schema"
	NSWSNT   = "http://docs.oasis-open.org/wsn/b-2"
	NSTopics = "http://www.onvif.org/ver10/topics"
	// TopicDialect is the dialect of the notification topics (ONVIF Core §9.5.5).
	TopicDialect = "http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet"
)

// Rule engine topics of the events carried (ONVIF Analytics Service Specification §6.1.3).
const (
	TopicLineCrossed   = "tns1:RuleEngine/LineDetector/Crossed"
	TopicObjectsInside = "tns1:RuleEngine/FieldDetector/ObjectsInside"
)

// Object is one tracked object of a frame.
type Object struct {
	// ID is the track id (tt:Object ObjectId).
	ID int64
	// Box is [x1,y1,x2,y2] in frame pixels.
	Box [4]float32
	// Label is the class name (mapped by ClassType), Score its likelihood 0…1.
	Label string
	Score float32
}

// Notification is one rule engine event of a frame.
type Notification struct {
	// Topic is TopicLineCrossed or TopicObjectsInside.
	Topic string
	// Rule is the line's or zone's name.
	Rule string
	// ObjectID is the track id of the object.
	ObjectID int64
	// Inside is the ObjectsInside state (true on entering, false on leaving).
	Inside bool
}

// Frame is the metadata of one video frame.
type Frame struct {
	// Time is the frame's capture time (tt:Frame UtcTime), encoded in UTC to the millisecond.
	Time time.Time
	// Width and Height are the frame's size in pixels, the space of the objects' boxes.
	Width, Height int
	// Source names the video source (the stream id), tt:SimpleItem VideoSourceConfigurationToken.
	Source  string
	Objects []Object
	Events  []Notification
}

const utcLayout = "2006-01-02T15:04:05.000Z"

// AppendXML appends f as one tt:MetadataStream document (ONVIF schema, element order of
// tt:VideoAnalyticsStream/tt:Frame/tt:Object/tt:Appearance/tt:ShapeDescriptor) to b.
// Boxes are in ONVIF's default transformation: x from -1 (left) to 1 (right), y from 1 (top)
// to -1 (bottom), clamped to that range.
func (f *Frame) AppendXML(b []byte) []byte {
	ts := f.Time.UTC().AppendFormat(nil, utcLayout)
	b = append(b, `<?xml version="1.0" encoding="UTF-8"?>`...)
	b = append(b, `<tt:MetadataStream xmlns:tt="`+NSSchema+`" xmlns:wsnt="`+NSWSNT+`" xmlns:tns1="`+NSTopics+`">`...)
	b = append(b, `<tt:VideoAnalytics><tt:Frame UtcTime="`...)
	b = append(b, ts...)
	b = append(b, `">`...)
	for i := range f.Objects {
		b = f.appendObject(b, &f.Objects[i])
	}
	b = append(b, `</tt:Frame></tt:VideoAnalytics>`...)
	if len(f.Events) > 0 {
		b = append(b, `<tt:Event>`...)
		for i := range f.Events {
			b = f.appendEvent(b, ts, &f.Events[i])
		}
		b = append(b, `</tt:Event>`...)
	}
	return append(b, `</tt:MetadataStream>`...)
}

func (f *Frame) appendObject(b []byte, o *Object) []byte {
	l, t := f.nx(o.Box[0]), f.ny(o.Box[1])
	r, bo := f.nx(o.Box[2]), f.ny(o.Box[3])
	b = append(b, `<tt:Object ObjectId="`...)
	b = strconv.AppendInt(b, o.ID, 10)
	b = append(b, `"><tt:Appearance><tt:Shape><tt:BoundingBox left="`...)
	b = appendNum(b, l)
	b = append(b, `" top="`...)
	b = appendNum(b, t)
	b = append(b, `" right="`...)
	b = appendNum(b, r)
	b = append(b, `" bottom="`...)
	b = appendNum(b, bo)
	b = append(b, `"/><tt:CenterOfGravity x="`...)
	b = appendNum(b, (l+r)/2)
	b = append(b, `" y="`...)
	b = appendNum(b, (t+bo)/2)
	b = append(b, `"/></tt:Shape><tt:Class><tt:Type Likelihood="`...)
	b = strconv.AppendFloat(b, float64(min(max(o.Score, 0), 1)), 'f', 3, 32)
	b = append(b, `">`...)
	b = appendText(b, ClassType(o.Label))
	return append(b, `</tt:Type></tt:Class></tt:Appearance></tt:Object>`...)
}

func (f *Frame) appendEvent(b, ts []byte, n *Notification) []byte {
	b = append(b, `<wsnt:NotificationMessage><wsnt:Topic Dialect="`+TopicDialect+`">`...)
	b = append(b, n.Topic...)
	b = append(b, `</wsnt:Topic><wsnt:Message><tt:Message UtcTime="`...)
	b = append(b, ts...)
	if n.Topic == TopicObjectsInside {
		b = append(b, `" PropertyOperation="Changed`...)
	}
	b = append(b, `"><tt:Source><tt:SimpleItem Name="VideoSourceConfigurationToken" Value="`...)
	b = appendText(b, f.Source)
	b = append(b, `"/><tt:SimpleItem Name="Rule" Value="`...)
	b = appendText(b, n.Rule)
	b = append(b, `"/></tt:Source>`...)
	if n.Topic == TopicObjectsInside {
		b = append(b, `<tt:Key><tt:SimpleItem Name="ObjectId" Value="`...)
		b = strconv.AppendInt(b, n.ObjectID, 10)
		b = append(b, `"/></tt:Key><tt:Data><tt:SimpleItem Name="IsInside" Value="`...)
		b = strconv.AppendBool(b, n.Inside)
	} else {
		b = append(b, `<tt:Data><tt:SimpleItem Name="ObjectId" Value="`...)
		b = strconv.AppendInt(b, n.ObjectID, 10)
	}
	return append(b, `"/></tt:Data></tt:Message></wsnt:Message></wsnt:NotificationMessage>`...)
}

// nx maps a pixel column to [-1,1] (left to right).
func (f *Frame) nx(x float32) float32 { return norm(x, f.Width, false) }

// ny maps a pixel row to [-1,1] (top is 1).
func (f *Frame) ny(y float32) float32 { return norm(y, f.Height, true) }

func norm(v float32, size int, flip bool) float32 {
	if size <= 0 {
		return 0
	}
	n := 2*v/float32(size) - 1
	if flip {
		n = -n
	}
	return min(max(n, -1), 1)
}

// appendNum writes v with 4 decimals (a tenth of a pixel on a 4K frame).
func appendNum(b []byte, v float32) []byte {
	return strconv.AppendFloat(b, float64(v), 'f', 4, 32)
}

// appendText writes s escaped for XML text and attribute values.
func appendText(b []byte, s string) []byte {
	if !strings.ContainsAny(s, `<>&"'`) {
		return append(b, s...)
	}
	for _, c := range []byte(s) {
		switch c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		case '"':
			b = append(b, "&quot;"...)
		case '\'':
			b = append(b, "&apos;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// classTypes maps COCO labels to ONVIF object class types (ONVIF Analytics Service
// Specification, tt:ObjectType: Animal, Human, Vehicle, Car, Bus, Truck, Bicycle, Motorcycle,
// …); other labels pass as they are (tt:Type is a string).
var classTypes = map[string]string{
	"person": "Human", "car": "Car", "bus": "Bus", "truck": "Truck", "bicycle": "Bicycle",
	"motorcycle": "Motorcycle", "train": "Vehicle", "boat": "Vehicle", "airplane": "Vehicle",
	"bird": "Animal", "cat": "Animal", "dog": "Animal", "horse": "Animal", "sheep": "Animal",
	"cow": "Animal", "elephant": "Animal", "bear": "Animal", "zebra": "Animal", "giraffe": "Animal",
	"license_plate": "LicensePlate", "plate": "LicensePlate", "face": "Face",
}

// ClassType is the ONVIF class type of a label; "Unknown" for an empty label.
func ClassType(label string) string {
	if t, ok := classTypes[strings.ToLower(label)]; ok {
		return t
	}
	if label == "" {
		return "Unknown"
	}
	return label
}
