// Package hasstest plays Home Assistant's side of MQTT discovery in tests: a client that
// follows the discovery and state topics as Home Assistant subscribes to them, the discovery
// payloads' JSON schema (written from Home Assistant's MQTT discovery documentation: the
// sensor and binary_sensor platforms' keys, the device and origin blocks) and the entities'
// states rendered from their value templates with Jinja (python3's jinja2, the engine Home
// Assistant uses, when installed). Tests only.
package hasstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schema is the discovery payload of a sensor or binary_sensor with the keys Home Assistant's
// documentation lists (https://www.home-assistant.io/integrations/sensor.mqtt/,
// binary_sensor.mqtt/, mqtt/#discovery-messages); anything else is refused.
const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {
    "topic": {"type": "string", "minLength": 1, "pattern": "^[^#+]+$"},
    "template": {"type": "string", "minLength": 1},
    "availability": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["topic"],
      "additionalProperties": false, "properties": {
        "topic": {"$ref": "#/$defs/topic"}, "payload_available": {"type": "string"},
        "payload_not_available": {"type": "string"}, "value_template": {"$ref": "#/$defs/template"}}}},
    "device": {"type": "object", "additionalProperties": false,
      "anyOf": [{"required": ["identifiers"]}, {"required": ["connections"]}],
      "properties": {
        "identifiers": {"oneOf": [{"type": "string", "minLength": 1},
          {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]},
        "connections": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string"}}},
        "configuration_url": {"type": "string"}, "hw_version": {"type": "string"},
        "manufacturer": {"type": "string"}, "model": {"type": "string"}, "model_id": {"type": "string"},
        "name": {"type": "string"}, "serial_number": {"type": "string"}, "suggested_area": {"type": "string"},
        "sw_version": {"type": "string"}, "via_device": {"type": "string"}}},
    "origin": {"type": "object", "required": ["name"], "additionalProperties": false, "properties": {
      "name": {"type": "string", "minLength": 1}, "sw_version": {"type": "string"}, "support_url": {"type": "string"}}},
    "common": {"type": "object", "required": ["state_topic", "unique_id", "device"], "properties": {
      "availability": {"$ref": "#/$defs/availability"},
      "availability_mode": {"enum": ["all", "any", "latest"]},
      "availability_template": {"$ref": "#/$defs/template"}, "availability_topic": {"$ref": "#/$defs/topic"},
      "device": {"$ref": "#/$defs/device"}, "origin": {"$ref": "#/$defs/origin"},
      "enabled_by_default": {"type": "boolean"}, "encoding": {"type": "string"},
      "entity_category": {"enum": ["config", "diagnostic"]}, "entity_picture": {"type": "string"},
      "expire_after": {"type": "integer", "minimum": 0}, "force_update": {"type": "boolean"},
      "icon": {"type": "string", "pattern": "^[a-z]+:[a-z0-9-]+$"},
      "json_attributes_template": {"$ref": "#/$defs/template"}, "json_attributes_topic": {"$ref": "#/$defs/topic"},
      "name": {"type": ["string", "null"]}, "object_id": {"type": "string"}, "default_entity_id": {"type": "string"},
      "payload_available": {"type": "string"}, "payload_not_available": {"type": "string"},
      "platform": {"const": "mqtt"}, "qos": {"enum": [0, 1, 2]},
      "state_topic": {"$ref": "#/$defs/topic"}, "unique_id": {"type": "string", "minLength": 1},
      "value_template": {"$ref": "#/$defs/template"}}},
    "sensor": {"allOf": [{"$ref": "#/$defs/common"}], "unevaluatedProperties": false,
     "properties": {"device_class": {"type": "string"}, "last_reset_value_template": {"$ref": "#/$defs/template"},
       "options": {"type": "array", "items": {"type": "string"}},
       "state_class": {"enum": ["measurement", "measurement_angle", "total", "total_increasing"]},
       "suggested_display_precision": {"type": "integer"}, "unit_of_measurement": {"type": "string"}},
     "not": {"anyOf": [{"required": ["payload_on"]}, {"required": ["payload_off"]}, {"required": ["off_delay"]}]}},
    "binary_sensor": {"allOf": [{"$ref": "#/$defs/common"}], "unevaluatedProperties": false,
     "properties": {"device_class": {"enum": ["battery", "battery_charging", "carbon_monoxide", "cold", "connectivity",
         "door", "garage_door", "gas", "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening",
         "plug", "power", "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "update",
         "vibration", "window"]},
       "off_delay": {"type": "integer"}, "payload_off": {"type": "string"}, "payload_on": {"type": "string"}},
     "not": {"anyOf": [{"required": ["state_class"]}, {"required": ["unit_of_measurement"]}]}}
  }
}`

// configTopic matches a discovery topic under prefix, as Home Assistant parses it:
// <prefix>/<component>/[<node_id>/]<object_id>/config.
func configTopic(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `/(sensor|binary_sensor)/(?:([A-Za-z0-9_-]+)/)?([A-Za-z0-9_-]+)/config$`)
}

// Schema compiles the discovery payload schema of component (sensor or binary_sensor).
func Schema(t testing.TB, component string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("hass.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("hass.json#/$defs/" + component)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Watcher is a client subscribed to topic filters: the last payload of each topic (empty: the
// retained message was cleared), as Home Assistant would see them.
type Watcher struct {
	mu      sync.Mutex
	last    map[string][]byte
	history map[string][][]byte
	c       paho3.Client
}

// Watch connects to the broker at addr (host:port) and subscribes to filters.
func Watch(t testing.TB, addr string, filters ...string) *Watcher {
	t.Helper()
	w := &Watcher{last: map[string][]byte{}, history: map[string][][]byte{}}
	w.c = paho3.NewClient(paho3.NewClientOptions().AddBroker("mqtt://" + addr).
		SetClientID(fmt.Sprintf("hass-%d", time.Now().UnixNano())).SetOrderMatters(true))
	if tok := w.c.Connect(); !tok.WaitTimeout(time.Minute) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	t.Cleanup(func() { w.c.Disconnect(100) })
	subs := map[string]byte{}
	for _, f := range filters {
		subs[f] = 1
	}
	tok := w.c.SubscribeMultiple(subs, func(_ paho3.Client, m paho3.Message) {
		w.mu.Lock()
		p := append([]byte{}, m.Payload()...)
		w.last[m.Topic()] = p
		w.history[m.Topic()] = append(w.history[m.Topic()], p)
		w.mu.Unlock()
	})
	if !tok.WaitTimeout(time.Minute) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	return w
}

// Last returns a copy of the last payload of every topic seen.
func (w *Watcher) Last() map[string][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.last)
}

// History returns every payload received on topic, in order.
func (w *Watcher) History(topic string) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.history[topic])
}

// Entity is a discovered entity.
type Entity struct {
	Topic, Component string
	Config           Config
	Raw              []byte
}

// Config holds the discovery keys the tests read.
type Config struct {
	Name             string `json:"name"`
	UniqueID         string `json:"unique_id"`
	StateTopic       string `json:"state_topic"`
	ValueTemplate    string `json:"value_template"`
	AttributesTopic  string `json:"json_attributes_topic"`
	DeviceClass      string `json:"device_class"`
	StateClass       string `json:"state_class"`
	AvailabilityMode string `json:"availability_mode"`
	Availability     []struct {
		Topic string `json:"topic"`
	} `json:"availability"`
	Device struct {
		Identifiers []string `json:"identifiers"`
		Name        string   `json:"name"`
	} `json:"device"`
}

// Entities returns the entities whose configs are published (not cleared) under prefix by
// "<device name>/<entity name>", each validated against the schema; unique ids must be unique.
func Entities(t testing.TB, last map[string][]byte, prefix string) map[string]Entity {
	t.Helper()
	schemas := map[string]*jsonschema.Schema{"sensor": Schema(t, "sensor"), "binary_sensor": Schema(t, "binary_sensor")}
	topicRE := configTopic(prefix)
	out := map[string]Entity{}
	ids := map[string]string{}
	for topic, p := range last {
		if !strings.HasPrefix(topic, prefix+"/") || len(p) == 0 {
			continue
		}
		m := topicRE.FindStringSubmatch(topic)
		if m == nil {
			t.Fatalf("discovery topic %q is not <prefix>/<component>/<node_id>/<object_id>/config", topic)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(p))
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		if err := schemas[m[1]].Validate(v); err != nil {
			t.Fatalf("%s: %s: %v", topic, p, err)
		}
		e := Entity{Topic: topic, Component: m[1], Raw: p}
		if err := json.Unmarshal(p, &e.Config); err != nil {
			t.Fatal(err)
		}
		if other, dup := ids[e.Config.UniqueID]; dup {
			t.Fatalf("unique_id %q of %s and %s", e.Config.UniqueID, topic, other)
		}
		ids[e.Config.UniqueID] = topic
		key := e.Config.Device.Name + "/" + e.Config.Name
		if _, dup := out[key]; dup {
			t.Fatalf("two entities %q", key)
		}
		out[key] = e
	}
	return out
}

// States renders each entity's value_template with its state topic's last payload (as
// value_json) the way Home Assistant does, through python3's jinja2 in a sandboxed
// environment; ok is false when python3 or jinja2 is missing. An entity whose state topic
// has no payload is "unknown".
func States(t testing.TB, ents map[string]Entity, last map[string][]byte) (states map[string]string, ok bool) {
	t.Helper()
	if err := haveJinja(); err != nil {
		t.Logf("no python3 jinja2 (%v): templates not rendered", err)
		return nil, false
	}
	type item struct {
		Name, Template string
		Payload        string
	}
	var in []item
	states = map[string]string{}
	for name, e := range ents {
		p, have := last[e.Config.StateTopic]
		if !have || len(p) == 0 {
			states[name] = "unknown"
			continue
		}
		in = append(in, item{name, e.Config.ValueTemplate, string(p)})
	}
	var r map[string]string
	render(t, in, &r)
	maps.Copy(states, r)
	return states, true
}

// Render renders template with each payload as value_json, as States does; ok is false
// without jinja2.
func Render(t testing.TB, template string, payloads [][]byte) (out []string, ok bool) {
	t.Helper()
	if err := haveJinja(); err != nil {
		t.Logf("no python3 jinja2 (%v): templates not rendered", err)
		return nil, false
	}
	type item struct {
		Name, Template string
		Payload        string
	}
	in := make([]item, len(payloads))
	for i, p := range payloads {
		in[i] = item{fmt.Sprint(i), template, string(p)}
	}
	var r map[string]string
	render(t, in, &r)
	for i := range payloads {
		out = append(out, r[fmt.Sprint(i)])
	}
	return out, true
}

// haveJinja reports, once per test binary, whether python3 has jinja2.
var haveJinja = sync.OnceValue(func() error { return exec.Command("python3", "-c", "import jinja2").Run() })

// render runs Jinja on in ([{Name, Template, Payload}]) into out (name → state).
func render(t testing.TB, in any, out *map[string]string) {
	t.Helper()
	b, _ := json.Marshal(in)
	const script = `import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
env = ImmutableSandboxedEnvironment()
out = {}
for it in json.load(sys.stdin):
    out[it["Name"]] = env.from_string(it["Template"]).render(value=it["Payload"], value_json=json.loads(it["Payload"])).strip()
json.dump(out, sys.stdout)`
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering templates: %v: %s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatal(err)
	}
}
