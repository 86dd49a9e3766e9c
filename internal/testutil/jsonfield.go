package testutil

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// DecimalSeconds is d in seconds written exactly: at most 9 decimals, trailing zeros dropped.
func DecimalSeconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := fmt.Sprintf("%d.%09d", d/time.Second, d%time.Second)
	return sign + strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// JSONField is the text of "name": in a JSON line, up to the next ',' or '}' (a number's
// digits as written).
func JSONField(line []byte, name string) string {
	key := []byte(`"` + name + `":`)
	i := bytes.Index(line, key)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	if j := bytes.IndexAny(rest, ",}"); j >= 0 {
		rest = rest[:j]
	}
	return string(rest)
}
