package testutil

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallFS mounts a tmpfs of size bytes on a temporary folder and returns it: a real file system
// that fills up (ENOSPC, statfs), unmounted when the test ends. It skips the test where the
// process may not mount (not root, no CAP_SYS_ADMIN, no tmpfs).
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)+",mode=0755"); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs (run as root for this test): %v", size, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
