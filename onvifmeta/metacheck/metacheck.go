// Package metacheck validates ONVIF metadata documents (tt:MetadataStream) against the ONVIF
// schema's required elements (onvif.xsd and metadatastream.xsd, OASIS WS-BaseNotification
// b-2.xsd): namespaces, element order and occurrences, required attributes and their types, and
// the boxes' range in the default transformation. A checker for tests and for VMS integration
// checks; it reads what a document carries into a Doc. The documents' own vinfer requirements
// (one tt:Frame, an ObjectId on every object, a Likelihood on every tt:Type) are checked too.
package metacheck

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"time"
)

// node is a parsed XML element.
type node struct {
	name  xml.Name
	attrs map[string]string
	text  string
	kids  []*node
}

func parseXML(doc []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var stack []*node
	var root *node
	for {
		tok, err := d.Token()
		if err != nil {
			if root != nil && len(stack) == 0 {
				return root, nil
			}
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name, attrs: map[string]string{}}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			} else if root == nil {
				root = n
			} else {
				return nil, fmt.Errorf("second root element %s", t.Name.Local)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
}

// particle is one element of an xs:sequence: namespace, name, occurrences.
type particle struct {
	ns, local string
	min, max  int // max -1: unbounded
}

const (
	tt   = "http://www.onvif.org/ver10/schema"
	wsnt = "http://docs.oasis-open.org/wsn/b-2"
)

// sequence checks n's children against an xs:sequence in order.
func sequence(n *node, seq ...particle) error {
	i := 0
	for _, p := range seq {
		c := 0
		for i < len(n.kids) && n.kids[i].name.Space == p.ns && n.kids[i].name.Local == p.local {
			c++
			i++
		}
		if c < p.min || (p.max >= 0 && c > p.max) {
			return fmt.Errorf("%s: %d %s, want %d…%d", n.name.Local, c, p.local, p.min, p.max)
		}
	}
	if i < len(n.kids) {
		return fmt.Errorf("%s: unexpected or misplaced %s {%s}", n.name.Local, n.kids[i].name.Local, n.kids[i].name.Space)
	}
	return nil
}

func requireAttrs(n *node, names ...string) error {
	for _, a := range names {
		if _, ok := n.attrs[a]; !ok {
			return fmt.Errorf("%s lacks required attribute %s", n.name.Local, a)
		}
	}
	return nil
}

func floatAttr(n *node, a string) (float64, error) {
	v, err := strconv.ParseFloat(n.attrs[a], 64)
	if err != nil {
		return 0, fmt.Errorf("%s@%s: %v", n.name.Local, a, err)
	}
	return v, nil
}

// Object is a tt:Object read from a document.
type Object struct {
	// ID is the ObjectId.
	ID int64
	// Left, Top, Right, Bottom are the bounding box in [-1,1].
	Left, Top, Right, Bottom float64
	// Class is the tt:Type, Likelihood its likelihood.
	Class      string
	Likelihood float64
}

// Event is a wsnt:NotificationMessage read from a document.
type Event struct {
	// Topic, the Rule, ObjectId and IsInside items (as written).
	Topic, Rule, ObjectID, Inside string
}

// Doc is a validated tt:MetadataStream.
type Doc struct {
	// UTC is the frame's UtcTime.
	UTC     time.Time
	Objects []Object
	Events  []Event
}

// Validate checks doc against the ONVIF schema's (onvif.xsd, b-2.xsd) required elements,
// their namespaces and order, required attributes and types, and the boxes' range, and
// returns what it carries.
func Validate(doc []byte) (*Doc, error) {
	root, err := parseXML(doc)
	if err != nil {
		return nil, err
	}
	if root.name.Space != tt || root.name.Local != "MetadataStream" {
		return nil, fmt.Errorf("root {%s}%s", root.name.Space, root.name.Local)
	}
	// MetadataStream: a sequence of a choice (VideoAnalytics, PTZ, Event, Extension).
	m := &Doc{}
	frames := 0
	for _, k := range root.kids {
		if k.name.Space != tt {
			return nil, fmt.Errorf("MetadataStream child {%s}%s", k.name.Space, k.name.Local)
		}
		switch k.name.Local {
		case "VideoAnalytics":
			if err := sequence(k, particle{tt, "Frame", 0, -1}, particle{tt, "Extension", 0, 1}); err != nil {
				return nil, err
			}
			for _, f := range k.kids {
				if f.name.Local != "Frame" {
					continue
				}
				frames++
				if err := frame(f, m); err != nil {
					return nil, err
				}
			}
		case "Event":
			if err := sequence(k, particle{wsnt, "NotificationMessage", 0, -1}); err != nil {
				return nil, err
			}
			for _, nm := range k.kids {
				e, err := notification(nm)
				if err != nil {
					return nil, err
				}
				m.Events = append(m.Events, e)
			}
		case "PTZ", "Extension":
		default:
			return nil, fmt.Errorf("MetadataStream child %s", k.name.Local)
		}
	}
	if frames != 1 {
		return nil, fmt.Errorf("%d frames, want 1", frames)
	}
	return m, nil
}

func frame(f *node, m *Doc) error {
	if err := requireAttrs(f, "UtcTime"); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, f.attrs["UtcTime"])
	if err != nil {
		return fmt.Errorf("Frame@UtcTime: %v", err)
	}
	m.UTC = t
	if err := sequence(f, particle{tt, "PTZStatus", 0, 1}, particle{tt, "Transformation", 0, 1},
		particle{tt, "Object", 0, -1}, particle{tt, "ObjectTree", 0, 1}, particle{tt, "Extension", 0, 1},
		particle{tt, "SceneImageRef", 0, 1}, particle{tt, "SceneImage", 0, 1}); err != nil {
		return err
	}
	for _, o := range f.kids {
		if o.name.Local != "Object" {
			continue
		}
		if err := requireAttrs(o, "ObjectId"); err != nil {
			return err
		}
		id, err := strconv.ParseInt(o.attrs["ObjectId"], 10, 64)
		if err != nil {
			return fmt.Errorf("Object@ObjectId: %v", err)
		}
		if err := sequence(o, particle{tt, "Appearance", 0, 1}, particle{tt, "Behaviour", 0, 1}, particle{tt, "Extension", 0, 1}); err != nil {
			return err
		}
		mo := Object{ID: id}
		for _, ap := range o.kids {
			if ap.name.Local != "Appearance" {
				continue
			}
			if err := sequence(ap, particle{tt, "Transformation", 0, 1}, particle{tt, "Shape", 0, 1}, particle{tt, "Color", 0, 1},
				particle{tt, "Class", 0, 1}, particle{tt, "Extension", 0, 1}, particle{tt, "GeoLocation", 0, 1},
				particle{tt, "VehicleInfo", 0, -1}, particle{tt, "LicensePlateInfo", 0, 1}, particle{tt, "HumanFace", 0, 1},
				particle{tt, "HumanBody", 0, 1}, particle{tt, "ImageRef", 0, 1}, particle{tt, "Image", 0, 1},
				particle{tt, "BarcodeInfo", 0, 1}, particle{tt, "SphericalCoordinate", 0, 1}, particle{tt, "Label", 0, -1}); err != nil {
				return err
			}
			for _, c := range ap.kids {
				switch c.name.Local {
				case "Shape":
					if err := shape(c, &mo); err != nil {
						return err
					}
				case "Class":
					if err := sequence(c, particle{tt, "ClassCandidate", 0, -1}, particle{tt, "Extension", 0, 1}, particle{tt, "Type", 0, -1}); err != nil {
						return err
					}
					for _, ty := range c.kids {
						if ty.name.Local != "Type" {
							continue
						}
						if err := requireAttrs(ty, "Likelihood"); err != nil {
							return err
						}
						if mo.Likelihood, err = floatAttr(ty, "Likelihood"); err != nil {
							return err
						}
						if mo.Likelihood < 0 || mo.Likelihood > 1 {
							return fmt.Errorf("Type@Likelihood %v outside [0,1]", mo.Likelihood)
						}
						mo.Class = ty.text
					}
				}
			}
		}
		m.Objects = append(m.Objects, mo)
	}
	return nil
}

func shape(s *node, mo *Object) error {
	if err := sequence(s, particle{tt, "BoundingBox", 1, 1}, particle{tt, "CenterOfGravity", 1, 1},
		particle{tt, "Polygon", 0, -1}, particle{tt, "Extension", 0, 1}); err != nil {
		return err
	}
	bb, cg := s.kids[0], s.kids[1]
	if err := requireAttrs(bb, "left", "top", "right", "bottom"); err != nil {
		return err
	}
	vals := []*float64{&mo.Left, &mo.Top, &mo.Right, &mo.Bottom}
	for i, a := range []string{"left", "top", "right", "bottom"} {
		v, err := floatAttr(bb, a)
		if err != nil {
			return err
		}
		if v < -1 || v > 1 {
			return fmt.Errorf("BoundingBox@%s %v outside [-1,1]", a, v)
		}
		*vals[i] = v
	}
	if mo.Left > mo.Right || mo.Bottom > mo.Top {
		return fmt.Errorf("BoundingBox inverted: %+v", *mo)
	}
	if err := requireAttrs(cg, "x", "y"); err != nil {
		return err
	}
	for _, a := range []string{"x", "y"} {
		v, err := floatAttr(cg, a)
		if err != nil {
			return err
		}
		if v < -1 || v > 1 {
			return fmt.Errorf("CenterOfGravity@%s %v outside [-1,1]", a, v)
		}
	}
	return nil
}

func notification(nm *node) (Event, error) {
	var e Event
	if err := sequence(nm, particle{wsnt, "SubscriptionReference", 0, 1}, particle{wsnt, "Topic", 0, 1},
		particle{wsnt, "ProducerReference", 0, 1}, particle{wsnt, "Message", 1, 1}); err != nil {
		return e, err
	}
	for _, k := range nm.kids {
		switch k.name.Local {
		case "Topic":
			if err := requireAttrs(k, "Dialect"); err != nil {
				return e, err
			}
			e.Topic = k.text
		case "Message":
			if len(k.kids) != 1 || k.kids[0].name.Space != tt || k.kids[0].name.Local != "Message" {
				return e, fmt.Errorf("wsnt:Message does not hold one tt:Message")
			}
			msg := k.kids[0]
			if err := requireAttrs(msg, "UtcTime"); err != nil {
				return e, err
			}
			if err := sequence(msg, particle{tt, "Source", 0, 1}, particle{tt, "Key", 0, 1},
				particle{tt, "Data", 0, 1}, particle{tt, "Extension", 0, 1}); err != nil {
				return e, err
			}
			for _, part := range msg.kids {
				if err := sequence(part, particle{tt, "SimpleItem", 0, -1}, particle{tt, "ElementItem", 0, -1}, particle{tt, "Extension", 0, 1}); err != nil {
					return e, err
				}
				for _, it := range part.kids {
					if err := requireAttrs(it, "Name", "Value"); err != nil {
						return e, err
					}
					switch it.attrs["Name"] {
					case "Rule":
						e.Rule = it.attrs["Value"]
					case "ObjectId":
						e.ObjectID = it.attrs["Value"]
					case "IsInside":
						e.Inside = it.attrs["Value"]
					}
				}
			}
		}
	}
	return e, nil
}
