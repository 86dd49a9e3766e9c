package api

import (
	"net/http"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// SinkView is a delivering sink as the API reports it (GET /api/sinks).
type SinkView struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Up is false from a failed delivery attempt until the next success; LastError the latest
	// failure.
	Up        bool   `json:"up"`
	LastError string `json:"last_error,omitempty"`
	// Outbox is "ok", or "disk_full" while its file system has no room and new records are
	// dropped (dropped.disk_full), since DiskFullSince.
	Outbox        string     `json:"outbox"`
	DiskFullSince *time.Time `json:"disk_full_since,omitempty"`
	Delivered     uint64     `json:"delivered"`
	Retried       uint64     `json:"retried"`
	Failed        uint64     `json:"failed"`
	Undeliverable uint64     `json:"undeliverable"`
	// Dropped counts records dropped before delivery by reason (full, age, rejected, corrupt,
	// disk_full).
	Dropped map[string]uint64 `json:"dropped"`
	// Depth and DepthBytes are the undelivered records and their bytes on disk; OldestAge the
	// age of the oldest, in seconds.
	Depth      uint64  `json:"depth"`
	DepthBytes int64   `json:"depth_bytes"`
	OldestAge  float64 `json:"oldest_age"`
}

// Outbox states of SinkView.
const (
	OutboxOK       = "ok"
	OutboxDiskFull = "disk_full"
)

func sinkView(si defs.SinkInfo) SinkView {
	v := SinkView{Name: si.Name, Type: si.Type, Up: si.Up, LastError: si.LastError, Outbox: OutboxOK,
		Delivered: si.Delivered, Retried: si.Retried, Failed: si.Failed, Undeliverable: si.Undeliverable,
		Dropped: si.Dropped, Depth: si.Depth, DepthBytes: si.DepthBytes, OldestAge: si.OldestAge.Seconds()}
	if !si.DiskFullSince.IsZero() {
		v.Outbox = OutboxDiskFull
		t := si.DiskFullSince.UTC()
		v.DiskFullSince = &t
	}
	if v.Dropped == nil {
		v.Dropped = map[string]uint64{}
	}
	return v
}

// listSinks answers GET /api/sinks: every delivering sink of this process, in configuration
// order (none when the app has no such sinks).
func (s *Server) listSinks(w http.ResponseWriter, r *http.Request) {
	out := []SinkView{}
	if ss, ok := s.App.(defs.Sinks); ok {
		for _, si := range ss.Sinks() {
			out = append(out, sinkView(si))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sinks": out})
}
