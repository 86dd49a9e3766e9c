package hasstest

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schema takes Home Assistant's documented discovery example and refuses undocumented
// keys, a missing state topic and sensor-only keys on a binary sensor.
func TestSchema(t *testing.T) {
	const doc = `{"device_class":"temperature","state_topic":"homeassistant/sensor/sensorBedroom/state",
	 "unit_of_measurement":"°C","value_template":"{{ value_json.temperature}}","unique_id":"temp01ae",
	 "device":{"identifiers":["bedroom01ae"],"name":"Bedroom","manufacturer":"Example sensors Ltd.",
	 "model":"Example Sensor","model_id":"K9","serial_number":"12AE3010545","hw_version":"1.01a",
	 "sw_version":"2024.1.0","configuration_url":"https://example.com/sensor_portal/config"}}`
	valid := func(component, p string) bool {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		return Schema(t, component).Validate(v) == nil
	}
	if !valid("sensor", doc) {
		t.Fatal("the documented example refused")
	}
	for _, bad := range []struct{ component, p string }{
		{"sensor", strings.Replace(doc, `"unique_id"`, `"unique":1,"unique_id"`, 1)},
		{"sensor", strings.Replace(doc, `"state_topic"`, `"topic"`, 1)},
		{"sensor", strings.Replace(doc, `"identifiers":["bedroom01ae"],`, ``, 1)},
		{"binary_sensor", doc},
	} {
		if valid(bad.component, bad.p) {
			t.Fatalf("%s accepted: %s", bad.component, bad.p)
		}
	}
}
