package file

import (
	"strings"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
)

// Kind opens files: a path, or file:///abs/path. The stream's loop setting applies.
var Kind = source.Kind{Schemes: []string{"file"}, Open: openStream}

func openStream(s *config.Stream) (source.Source, error) {
	path := s.Source
	if _, rest, ok := strings.Cut(path, "://"); ok {
		path = rest
	}
	f := &Source{Path: path, Loop: s.Loop}
	if err := f.Init(); err != nil {
		return nil, err
	}
	return f, nil
}
