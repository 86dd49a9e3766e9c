package cluster

import (
	"fmt"
	"math"
	"testing"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cam-%03d", i)
	}
	return out
}

func TestAssignSpreadsByWeight(t *testing.T) {
	streams := ids(3000)
	got := Assign(streams, []Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 2}})
	count := map[string]int{}
	for _, n := range got {
		count[n]++
	}
	for node, want := range map[string]float64{"a": 750, "b": 750, "c": 1500} {
		if d := math.Abs(float64(count[node]) - want); d > want*0.1 {
			t.Errorf("node %s: %d streams, want about %.0f", node, count[node], want)
		}
	}
}

// TestAssignMovesAboutOneNth: a fourth node takes about a quarter of the streams, all from the
// others; no stream moves between the old nodes. Removing it moves them back.
func TestAssignMovesAboutOneNth(t *testing.T) {
	streams := ids(1000)
	three := []Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	before := Assign(streams, three)
	after := Assign(streams, append(three, Member{Name: "d", Weight: 1}))
	moved := 0
	for _, id := range streams {
		if before[id] != after[id] {
			moved++
			if after[id] != "d" {
				t.Fatalf("%s moved from %s to %s, not to the new node", id, before[id], after[id])
			}
		}
	}
	if moved < 200 || moved > 300 {
		t.Errorf("%d of 1000 streams moved to the 4th node, want about 250", moved)
	}
	back := Assign(streams, three)
	for _, id := range streams {
		if back[id] != before[id] {
			t.Fatalf("%s: %s after the 4th node left, %s before it came", id, back[id], before[id])
		}
	}
}

// TestAssignCaps: a node at its cap gets no more; streams beyond every cap stay unassigned.
func TestAssignCaps(t *testing.T) {
	streams := ids(10)
	got := Assign(streams, []Member{{Name: "a", Weight: 1, Max: 2}, {Name: "b", Weight: 1, Max: 3}})
	count := map[string]int{}
	for _, n := range got {
		count[n]++
	}
	if count["a"] != 2 || count["b"] != 3 || len(got) != 5 {
		t.Fatalf("caps 2 and 3 over 10 streams: %v (%d assigned)", count, len(got))
	}
	if len(Assign(streams, nil)) != 0 {
		t.Fatal("streams assigned without members")
	}
}
