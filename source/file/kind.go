package file

import (
	"strings"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
)

// Kind opens files: a path, or file:///abs/path. The stream's loop and realtime settings apply; the file
// must be a regular file inside the policy's roots.
var Kind = source.Kind{Schemes: []string{"file"}, Open: openStream}

func openStream(s *config.Stream, p source.Policy) (source.Source, error) {
	path := s.Source
	if _, rest, ok := strings.Cut(path, "://"); ok {
		path = rest
	}
	f := &Source{Path: path, Loop: s.Loop, Realtime: s.Realtime, Roots: p.Roots, OpenTimeout: p.Timeout()}
	if err := f.Init(); err != nil {
		f.Close() // Init leaves what it opened for Close
		return nil, err
	}
	return f, nil
}
