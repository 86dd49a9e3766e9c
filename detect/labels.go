package detect

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
)

// coco80 is darknet's data/coco.names (pjreddie/darknet @ f6afaabc, public domain): the 80 COCO
// class names in the contiguous 0…79 order the bundled models use.
//
//go:embed labels/coco80.names
var coco80 string

// COCO80 returns the 80 COCO class names.
func COCO80() []string { return parseLabels(coco80) }

// LoadLabels reads a labels file: one class name per line, index = class id; blank lines at the
// end are ignored.
func LoadLabels(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	l := parseLabels(string(b))
	if len(l) == 0 {
		return nil, fmt.Errorf("labels: %s is empty (want one class name per line)", path)
	}
	return l, nil
}

func parseLabels(s string) []string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return lines
}
