package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	cases := []struct {
		name    string
		content string
		err     error
		want    string
	}{
		{"new", "one", nil, "one"},
		{"replace", "two", nil, "two"},
		{"failed write keeps the old file", "three", errors.New("disk full"), "two"},
	}
	for _, c := range cases {
		n, err := Write(path, Options{}, func(w io.Writer) error {
			io.WriteString(w, c.content)
			return c.err
		})
		if !errors.Is(err, c.err) || (c.err == nil && n != int64(len(c.content))) {
			t.Fatalf("%s: n %d err %v", c.name, n, err)
		}
		b, _ := os.ReadFile(path)
		if string(b) != c.want {
			t.Fatalf("%s: file holds %q, want %q", c.name, b, c.want)
		}
		if _, err := os.Stat(path + TmpExt); !os.IsNotExist(err) {
			t.Fatalf("%s: temporary file left: %v", c.name, err)
		}
	}
}
