package sink

// SceneWatcher is a sink that describes streams to its peer (the MQTT sink's Home Assistant
// discovery). The application tells it, beside the results it writes, each stream's zones
// and lines once the stream runs and after each scene change, and when the stream is
// removed. Calls may come from any goroutine, concurrently with Write.
type SceneWatcher interface {
	// Scene gives stream's current zones and lines (the whole set: names missing from the
	// previous call are gone).
	Scene(stream string, s Scene)
	// Removed tells that stream was removed (not merely ended): its description goes.
	Removed(stream string)
}

// Scene is a stream's zones and lines as a SceneWatcher sees them.
type Scene struct {
	Zones, Lines []Place
}

// Place is one zone or line: its name and the class labels it counts (empty: every class).
type Place struct {
	Name    string
	Classes []string
}
