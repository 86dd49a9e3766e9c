package event_test

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// TestIDNamesNode: a generator set to a node makes IDs that name it (its tag, top bit set),
// still strictly increasing within a millisecond and across a clock step back; IDs of a
// generator without a node, and those parsed from their text, name none or the same node.
func TestIDNamesNode(t *testing.T) {
	g := event.NewGenerator([32]byte{1})
	if id := g.New(time.Now()); func() bool { _, ok := id.Node(); return ok }() {
		t.Fatalf("%s names a node without SetNode", id)
	}
	g.SetNode("node-b")
	want := event.NodeTag("node-b")
	if want&0x8000 == 0 || want == event.NodeTag("node-c") {
		t.Fatalf("tags %x %x", want, event.NodeTag("node-c"))
	}
	now := time.Now()
	var last event.ID
	for i := range 1000 {
		at := now
		if i == 500 {
			at = now.Add(-time.Hour) // a clock stepped back
		}
		id := g.New(at)
		if tag, ok := id.Node(); !ok || tag != want {
			t.Fatalf("id %d %s: tag %x %v, want %x", i, id, tag, ok, want)
		}
		if id.String() <= last.String() {
			t.Fatalf("id %d %s not after %s", i, id, last)
		}
		back, err := event.ParseID(id.String())
		if err != nil || back != id {
			t.Fatalf("%s parsed back as %s (%v)", id, back, err)
		}
		last = id
	}
	g.SetNode("")
	if _, ok := g.New(now).Node(); ok {
		t.Fatal("an id names a node after SetNode(\"\")")
	}
}
