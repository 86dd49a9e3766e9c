package rtsp

import (
	"log/slog"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
)

// Kind opens rtsp://[user:pass@]host[:port]/path and rtsps:// cameras; the stream's transport
// setting applies.
var Kind = source.Kind{Schemes: []string{"rtsp", "rtsps"}, Open: openStream}

func openStream(s *config.Stream, p source.Policy) (source.Source, error) {
	r := &Source{URL: s.Source, Transport: s.Transport.String(), ReadTimeout: p.Timeout(), Logger: slog.Default().With("stream", s.ID)}
	if err := r.Init(); err != nil {
		return nil, err
	}
	return r, nil
}
