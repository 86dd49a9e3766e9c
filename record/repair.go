package record

import (
	"encoding/binary"
	"os"
)

// repair makes a segment cut by a crash playable: it keeps the file's leading boxes (ftyp,
// moov) and its whole fragments (a moof and the mdat after it), cutting what follows. It
// returns the size kept; 0 means the file has no whole fragment (the caller removes it).
func repair(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	var off, good int64
	var hdr [16]byte
	sawMoov, inFragment := false, false
	for off+8 <= size {
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			break
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		if n == 1 { // a 64-bit size follows
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				break
			}
			n = int64(binary.BigEndian.Uint64(hdr[8:16]))
		}
		if n < 8 || n > size-off { // size 0 (to the end) is what a torn writer leaves too; size-off cannot overflow
			break
		}
		switch typ {
		case "moov":
			sawMoov = true
		case "moof":
			inFragment = true
		case "mdat":
			if inFragment && sawMoov {
				good = off + n
			}
			inFragment = false
		}
		off += n
	}
	if good == 0 {
		return 0, nil
	}
	if good < size {
		if err := f.Truncate(good); err != nil {
			return 0, err
		}
	}
	return good, f.Sync()
}
