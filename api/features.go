package api

import "github.com/vinfer/vinfer/internal/defs"

// features are the optional parts a node runs, as GET /api reports them under "features": the
// web page polls /api/cluster and /api/gb28181/devices only where they are true.
type features struct {
	// Cluster: a cluster: section joined (GET /api/cluster answers).
	Cluster bool `json:"cluster"`
	// GB28181: a GB28181 platform runs (GET /api/gb28181/devices answers).
	GB28181 bool `json:"gb28181"`
}

func (s *Server) features() features {
	f := features{Cluster: s.Cluster != nil}
	if g, ok := s.App.(defs.GB28181); ok {
		_, f.GB28181 = g.GB28181()
	}
	return f
}
