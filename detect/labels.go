package detect

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
)

// coco80Names is darknet's data/coco.names (pjreddie/darknet @ f6afaabcdf85f77e7aff2ec55c020c0e297c77f9,
// "Darknet is public domain", YOLO LICENSE v2): the 80 COCO class names in the contiguous
// 0…79 order of the YOLOX, FastestDet, YOLOv5/v8 and NanoDet COCO models.
//
//go:embed labels/coco80.names
var coco80Names string

// COCO80 returns the 80 COCO class names, index = class id (a new slice each call).
func COCO80() []string { return ParseLabels(coco80Names) }

// LoadLabels reads a labels file: one class name per line, line i (from 0) naming class i.
// Names are trimmed of surrounding white space; CRLF line ends, a UTF-8 byte-order mark and
// blank lines at the end are ignored. An unreadable or empty file is an error.
func LoadLabels(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("detect: labels: %w", err)
	}
	l := ParseLabels(string(b))
	if len(l) == 0 {
		return nil, fmt.Errorf("detect: labels file %s is empty: want one class name per line", path)
	}
	return l, nil
}

// ParseLabels splits the text of a labels file as LoadLabels does.
func ParseLabels(s string) []string {
	s = strings.TrimPrefix(s, "\ufeff")
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
