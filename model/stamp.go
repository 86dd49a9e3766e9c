package model

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// stamp identifies one version of a file without reading it: size, modification time (ns) and
// the inode, so that both an in-place rewrite and a replacement by rename show as a change.
type stamp struct {
	size    int64
	mtime   int64 // unix nanoseconds
	dev     uint64
	ino     uint64
	missing bool // the file could not be stat'ed
}

func stampOf(fi os.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return s
}

// statStamp stamps the file at path now; a missing or unreadable file gives a stamp with
// missing set.
func statStamp(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{missing: true}
	}
	return stampOf(fi)
}

func (s stamp) String() string {
	if s.missing {
		return "missing"
	}
	return fmt.Sprintf("%d bytes, modified %s", s.size, time.Unix(0, s.mtime).Format(time.RFC3339Nano))
}
