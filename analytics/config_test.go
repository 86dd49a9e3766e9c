package analytics

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const yamlDoc = `
zones:
  - name: table
    polygon: [[200, 250], [440, 250], [440, 400], [200, 400]]
    classes: [person]
    anchor: bottom-center
    inertia: 3
    loiter: 30s
lines:
  - name: door
    points: [[0.1, 0.4], [0.9, 0.4]]
    normalized: true
    anchor: center
    margin: 6
track_events: true
retention: 1500ms
`

func wantDoc() Config {
	m := 6.0
	return Config{
		Zones: []Zone{{Name: "table", Polygon: []Point{{200, 250}, {440, 250}, {440, 400}, {200, 400}}, Classes: []string{"person"},
			Anchor: BottomCenter, Inertia: 3, Loiter: Duration(30 * time.Second)}},
		Lines:       []Line{{Name: "door", Points: []Point{{0.1, 0.4}, {0.9, 0.4}}, Normalized: true, Anchor: Center, Margin: &m}},
		TrackEvents: true,
		Retention:   Duration(1500 * time.Millisecond),
	}
}

func TestYAML(t *testing.T) {
	var c Config
	if err := yaml.UnmarshalWithOptions([]byte(yamlDoc), &c, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, wantDoc()) {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := yaml.UnmarshalWithOptions(out, &back, yaml.Strict()); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("%s: %+v %v", out, back, err)
	}
	var bad Config
	err = yaml.UnmarshalWithOptions([]byte("zones: [{name: z, polygon: [[0,0],[1,0],[1,1]], loiter: soon}]"), &bad, yaml.Strict())
	if err == nil || !strings.Contains(err.Error(), "30s") {
		t.Fatalf("bad duration: %v", err)
	}
	err = yaml.UnmarshalWithOptions([]byte("zones: [{name: z, polgon: [[0,0],[1,0],[1,1]]}]"), &bad, yaml.Strict())
	if err == nil {
		t.Fatal("unknown field accepted")
	}
}

func TestJSON(t *testing.T) {
	b, err := json.Marshal(wantDoc())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"zones":[{"name":"table","polygon":[[200,250],[440,250],[440,400],[200,400]],"classes":["person"],"anchor":"bottom-center","inertia":3,"loiter":"30s"}],` +
		`"lines":[{"name":"door","points":[[0.1,0.4],[0.9,0.4]],"normalized":true,"anchor":"center","margin":6}],"track_events":true,"retention":"1.5s"}`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, wantDoc()) {
		t.Fatalf("%+v %v", back, err)
	}
}

// TestSetConfigIsACopy: a Set does not change when the Config it came from does.
func TestSetConfigIsACopy(t *testing.T) {
	c := wantDoc()
	s, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Zones[0].Polygon[0] = Point{1, 1}
	c.Zones[0].Classes[0] = "car"
	*c.Lines[0].Margin = 99
	got := s.Config()
	if !reflect.DeepEqual(got, wantDoc()) {
		t.Fatalf("%+v", got)
	}
	got.Zones[0].Name = "changed"
	if s.Config().Zones[0].Name != "table" {
		t.Fatal("Config returned shared memory")
	}
}
