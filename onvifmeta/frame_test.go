package onvifmeta

import (
	"strings"
	"testing"
	"time"
)

// TestClassType: COCO labels map to ONVIF class types, others pass as they are.
func TestClassType(t *testing.T) {
	for label, want := range map[string]string{"person": "Human", "Car": "Car", "dog": "Animal", "motorcycle": "Motorcycle",
		"train": "Vehicle", "license_plate": "LicensePlate", "kite": "kite", "": "Unknown"} {
		if got := ClassType(label); got != want {
			t.Errorf("%q: %q, want %q", label, got, want)
		}
	}
}

// TestAppendXMLEscapes: names from the configuration and labels cannot break the document.
func TestAppendXMLEscapes(t *testing.T) {
	f := Frame{Time: time.Unix(0, 0), Width: 10, Height: 10, Source: `a"<b>&'`,
		Objects: []Object{{ID: 1, Box: [4]float32{1, 1, 2, 2}, Label: "</tt:Type><x>"}},
		Events:  []Notification{{Topic: TopicLineCrossed, Rule: `"/><evil/>`, ObjectID: 1}}}
	doc := string(f.AppendXML(nil))
	for _, bad := range []string{"<x>", "<evil/>", `a"<b>`} {
		if strings.Contains(doc, bad) {
			t.Fatalf("%q unescaped in %s", bad, doc)
		}
	}
	if !strings.Contains(doc, `UtcTime="1970-01-01T00:00:00.000Z"`) {
		t.Fatalf("UtcTime: %s", doc)
	}
}
