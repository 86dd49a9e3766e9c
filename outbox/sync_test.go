package outbox

import (
	"testing"
	"time"
)

func TestSyncPolicies(t *testing.T) {
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncInterval} {
		o, _ := open(t, t.TempDir(), func(o *Outbox) { o.Fsync = p; o.FsyncEvery = time.Millisecond })
		appendN(t, o, 20)
		if err := o.Sync(); err != nil {
			t.Fatal(err)
		}
		if o.synced.Load() != 20 || o.Stats().Syncs == 0 {
			t.Fatalf("policy %d: synced %d, syncs %d", p, o.synced.Load(), o.Stats().Syncs)
		}
	}
	// The group-commit timer syncs without a call to Sync.
	o, _ := open(t, t.TempDir(), func(o *Outbox) { o.Fsync = FsyncInterval; o.FsyncEvery = time.Millisecond })
	appendN(t, o, 5)
	eventually(t, func() bool { return o.synced.Load() == 5 })
}
