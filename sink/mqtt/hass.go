package mqtt

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Home Assistant MQTT discovery (discovery: homeassistant; docs/homeassistant.md): each stream
// is a device; its entities' configs are retained on
// <discovery_prefix>/<component>/<node_id>/<object_id>/config and cleared (an empty retained
// payload) when the stream is removed or a zone or line leaves its scene. Per stream:
//
//	<prefix>/<stream>/availability  retained "online" while the stream runs, "offline" after the
//	                                sink closed; with <prefix>/available (availability_mode all)
//	<prefix>/<stream>/last_event    retained: the stream's latest event (as on .../events)
//	sensor  last event              state: its type; attributes: the event
//
// per zone (state: its retained count topic): binary_sensor occupancy (ON while objects > 0),
// sensor objects, and a sensor per class (the zone's classes, else each class once seen in it,
// up to maxClassSensors); per line: sensors in and out (state_class total_increasing).

// Discovery is the only discovery setting's value besides none.
const Discovery = "homeassistant"

// maxClassSensors bounds the class sensors of one zone discovered from its events.
const maxClassSensors = 64

// Errors of the discovery settings.
var (
	ErrDiscovery       = errors.New("mqtt: discovery must be homeassistant or empty")
	ErrDiscoveryPrefix = errors.New("mqtt: discovery_prefix must be 1–64 bytes without '+', '#' or a leading '$'")
	ErrDiscoveryCounts = errors.New("mqtt: discovery needs the count topics (counts: true)")
)

// hassSink is a broker sink with Home Assistant discovery (a sink.SceneWatcher).
type hassSink struct {
	*brokered.Sink
	h   *hass
	buf []byte // Write's
}

var _ sink.SceneWatcher = (*hassSink)(nil)

// Write writes r, retains its last event on <prefix>/<stream>/last_event (one retained
// topic: the newest event wins also where MQTT 5 publishes a batch's events concurrently)
// and discovers the classes its zone events bring.
func (s *hassSink) Write(r *sink.Result) error {
	if err := s.Sink.Write(r); err != nil {
		return err
	}
	if n := len(r.Events); n > 0 && s.Carry().Events() {
		e := &r.Events[n-1]
		s.buf = e.AppendJSON(s.buf[:0])
		if err := s.h.retain(s.h.lastEvent(cmp.Or(e.Stream, r.Stream)), s.buf); err != nil {
			return err
		}
	}
	s.h.observe(r)
	return nil
}

// Scene publishes stream's device and entities (seeding the zones' and lines' counts), clears
// the entities of zones and lines no longer in s and marks the stream online.
func (s *hassSink) Scene(stream string, sc sink.Scene) { s.h.scene(stream, sc) }

// Removed clears stream's entities, its availability and last_event topics.
func (s *hassSink) Removed(stream string) { s.h.removed(stream) }

// Close marks every stream offline, then closes the sink.
func (s *hassSink) Close() error {
	s.h.offline()
	return s.Sink.Close()
}

// hass keeps what discovery published per stream.
type hass struct {
	k                     *brokered.Sink
	dprefix, prefix, node string
	qos                   int
	mu                    sync.Mutex
	streams               map[string]*hassStream
	closed                bool
	retain                func(topic string, payload []byte) error // k.Retain
	seed                  func(stream, name string, line bool) error
	errOnce               sync.Once
	logErr                func(err error)
}

type hassStream struct {
	scene  sink.Scene
	known  bool                // a Scene call came
	seen   map[string][]string // zone without classes → classes seen in its events, first-seen order
	topics map[string]string   // config topic → payload published
}

func newHass(k *brokered.Sink, dprefix, prefix string, qos int, logErr func(error)) *hass {
	return &hass{k: k, dprefix: dprefix, prefix: prefix, node: nodeID(k.Name()), qos: qos,
		streams: map[string]*hassStream{}, retain: k.Retain, seed: k.SeedCount, logErr: logErr}
}

func (h *hass) stream(id string) *hassStream {
	st := h.streams[id]
	if st == nil {
		st = &hassStream{seen: map[string][]string{}, topics: map[string]string{}}
		h.streams[id] = st
	}
	return st
}

func (h *hass) scene(stream string, sc sink.Scene) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	st := h.stream(stream)
	st.scene, st.known = sc, true
	for _, z := range sc.Zones {
		h.check(h.seed(stream, z.Name, false))
	}
	for _, l := range sc.Lines {
		h.check(h.seed(stream, l.Name, true))
	}
	h.publish(stream, st)
	h.check(h.retain(h.availability(stream), []byte("online")))
}

func (h *hass) removed(stream string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.streams[stream]
	if st == nil || h.closed {
		return
	}
	st.scene, st.known = sink.Scene{}, false
	h.publish(stream, st)
	h.check(h.retain(h.availability(stream), nil))
	h.check(h.retain(h.lastEvent(stream), nil))
	delete(h.streams, stream)
}

func (h *hass) offline() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id, st := range h.streams {
		if st.known {
			h.check(h.retain(h.availability(id), []byte("offline")))
		}
	}
}

// observe notes the classes of r's zone events in zones that count every class and publishes
// the sensors of new ones.
func (h *hass) observe(r *sink.Result) {
	if len(r.Events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range r.Events {
		e := &r.Events[i]
		if e.Zone == "" || e.Label == "" || (e.Type != event.ZoneEnter && e.Type != event.ZoneLeave && e.Type != event.ZoneLoiter) {
			continue
		}
		stream := cmp.Or(e.Stream, r.Stream)
		st := h.stream(stream)
		seen := st.seen[e.Zone]
		if slices.Contains(seen, e.Label) || len(seen) >= maxClassSensors {
			continue
		}
		st.seen[e.Zone] = append(seen, e.Label)
		if st.known && !h.closed {
			h.publish(stream, st)
		}
	}
}

// publish retains the configs of st's entities that changed and clears those that went.
func (h *hass) publish(stream string, st *hassStream) {
	want := map[string]string{}
	if st.known {
		h.entities(stream, st, want)
	}
	topics := make([]string, 0, len(want))
	for t := range want {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		if st.topics[t] != want[t] {
			h.check(h.retain(t, []byte(want[t])))
			st.topics[t] = want[t]
		}
	}
	var gone []string
	for t := range st.topics {
		if _, ok := want[t]; !ok {
			gone = append(gone, t)
		}
	}
	slices.Sort(gone)
	for _, t := range gone {
		h.check(h.retain(t, nil))
		delete(st.topics, t)
	}
}

// check logs the first error publishing discovery met (an outbox I/O error).
func (h *hass) check(err error) {
	if err != nil && h.logErr != nil {
		h.errOnce.Do(func() { h.logErr(err) })
	}
}

func (h *hass) lastEvent(stream string) string {
	return h.prefix + "/" + stream + "/last_event"
}

func (h *hass) availability(stream string) string {
	return h.prefix + "/" + stream + "/availability"
}

// hassConfig is an entity's discovery payload (Home Assistant's MQTT discovery schema: the
// sensor and binary_sensor platforms' keys).
type hassConfig struct {
	Name                string      `json:"name"`
	UniqueID            string      `json:"unique_id"`
	StateTopic          string      `json:"state_topic"`
	ValueTemplate       string      `json:"value_template"`
	JSONAttributesTopic string      `json:"json_attributes_topic,omitempty"`
	DeviceClass         string      `json:"device_class,omitempty"`
	StateClass          string      `json:"state_class,omitempty"`
	PayloadOn           string      `json:"payload_on,omitempty"`
	PayloadOff          string      `json:"payload_off,omitempty"`
	Icon                string      `json:"icon,omitempty"`
	Availability        []hassAvail `json:"availability"`
	AvailabilityMode    string      `json:"availability_mode"`
	QoS                 int         `json:"qos"`
	Device              hassDevice  `json:"device"`
	Origin              hassOrigin  `json:"origin"`
}

type hassAvail struct {
	Topic               string `json:"topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
}

type hassDevice struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"manufacturer"`
	Model        string   `json:"model"`
}

type hassOrigin struct {
	Name       string `json:"name"`
	SupportURL string `json:"support_url"`
}

// entities adds the config topic and payload of each of st's entities to out.
func (h *hass) entities(stream string, st *hassStream, out map[string]string) {
	base := hassConfig{
		Availability: []hassAvail{
			{Topic: h.prefix + "/available", PayloadAvailable: "online", PayloadNotAvailable: "offline"},
			{Topic: h.availability(stream), PayloadAvailable: "online", PayloadNotAvailable: "offline"},
		},
		AvailabilityMode: "all", QoS: h.qos,
		Device: hassDevice{Identifiers: []string{"vinfer_" + h.node + "_" + topicID(stream)}, Name: stream,
			Manufacturer: "vinfer", Model: "video analytics stream"},
		Origin: hassOrigin{Name: "vinfer", SupportURL: "https://github.com/vinfer/vinfer"},
	}
	add := func(component string, c hassConfig, parts ...string) {
		id := topicID(strings.Join(append([]string{stream}, parts...), "\x00"))
		c.UniqueID = "vinfer_" + h.node + "_" + id
		b, _ := json.Marshal(c) // plain strings and ints: cannot fail
		out[h.dprefix+"/"+component+"/"+h.node+"/"+id+"/config"] = string(b)
	}
	events := h.lastEvent(stream)
	c := base
	c.Name, c.StateTopic, c.ValueTemplate, c.JSONAttributesTopic, c.Icon = "last event", events,
		"{{ value_json.type }}", events, "mdi:cctv"
	add("sensor", c, "event")
	for _, z := range st.scene.Zones {
		state := CountTopic(h.prefix, []byte(stream), []byte(z.Name))
		c := base
		c.Name, c.StateTopic, c.DeviceClass, c.PayloadOn, c.PayloadOff = z.Name+" occupancy", state, "occupancy", "ON", "OFF"
		c.ValueTemplate = "{{ 'ON' if value_json.objects > 0 else 'OFF' }}"
		add("binary_sensor", c, "zone", z.Name, "occupancy")
		c = base
		c.Name, c.StateTopic, c.StateClass, c.Icon = z.Name+" objects", state, "measurement", "mdi:counter"
		c.ValueTemplate = "{{ value_json.objects }}"
		add("sensor", c, "zone", z.Name, "objects")
		classes := z.Classes
		if len(classes) == 0 {
			classes = st.seen[z.Name]
		}
		for _, k := range classes {
			c := base
			c.Name, c.StateTopic, c.StateClass, c.Icon = z.Name+" "+k, state, "measurement", "mdi:counter"
			lit := jinjaString(k)
			c.ValueTemplate = "{{ value_json.classes[" + lit + "].objects if " + lit + " in value_json.classes else 0 }}"
			add("sensor", c, "zone", z.Name, "class", k)
		}
	}
	for _, l := range st.scene.Lines {
		state := CountTopic(h.prefix, []byte(stream), []byte(l.Name))
		for _, dir := range []string{"in", "out"} {
			c := base
			c.Name, c.StateTopic, c.StateClass, c.Icon = l.Name+" "+dir, state, "total_increasing", "mdi:counter"
			c.ValueTemplate = "{{ value_json['" + dir + "'] }}"
			add("sensor", c, "line", l.Name, dir)
		}
	}
}

// nodeID is the sink's name as a discovery node id: '.' (which Home Assistant refuses) made
// topicID's way.
func nodeID(name string) string {
	if strings.Contains(name, ".") {
		return topicID(name)
	}
	return name
}

// jinjaString quotes s as a Jinja string literal (Home Assistant's templates): backslashes and
// single quotes escaped, inside single quotes.
func jinjaString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// topicID makes a topic level and id of s that Home Assistant accepts ([A-Za-z0-9_-]): s's
// letters, digits, '_' and '-' (others become '_'; at most 40), '_' and 10 hex digits of
// SHA-256(s), so that distinct values give distinct ids.
func topicID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 40; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(s))
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(sum[:5]))
	return b.String()
}
