package cluster

import (
	"fmt"
	"testing"
	"time"
)

// TestWarnDueBounded: the keys of rejected entries are chosen by whoever writes to the NATS
// account; the once-per-interval memory of them stays within warnKeysMax however many come,
// and a key seen within its interval is still not logged again.
func TestWarnDueBounded(t *testing.T) {
	last := map[string]time.Time{}
	for i := range 10 * warnKeysMax {
		warnDue(last, fmt.Sprintf("vinfer-owners/forged-%d", i), time.Minute)
	}
	if len(last) > warnKeysMax {
		t.Fatalf("%d keys remembered, want at most %d", len(last), warnKeysMax)
	}
	if warnDue(last, "vinfer-owners/forged-0", time.Minute) {
		t.Error("a key logged within its interval is logged again")
	}
	old := map[string]time.Time{}
	for i := range warnKeysMax {
		old[fmt.Sprint(i)] = time.Now().Add(-time.Hour)
	}
	if !warnDue(old, "new", time.Minute) || len(old) != 1 {
		t.Errorf("full of keys past their interval: a new key not logged, or %d keys kept (want 1)", len(old))
	}
}
