package defs

// GB28181Upstreams shows the upper platforms vinfer cascades to (gb28181.upstream, package
// gb28181/cascade).
type GB28181Upstreams interface {
	// GB28181Upstreams returns one entry per upper platform, in configuration order; none
	// without upstream entries.
	GB28181Upstreams() []GB28181Upstream
}

// GB28181Upstream is one upper platform's state.
type GB28181Upstream struct {
	ServerID  string `json:"server_id"`
	Address   string `json:"address"`
	Transport string `json:"transport"`
	// Registered: the upper platform accepted the last REGISTER.
	Registered bool `json:"registered"`
	// Sessions are the live views being sent.
	Sessions int `json:"sessions"`
	// Counters: registrations, refused (wrong password or device ID), register_errors,
	// keepalives, keepalive_failures, queries, forbidden, invites, byes, alarms_sent,
	// alarms_dropped, alarms_filtered, subscriptions, media_dropped, playbacks,
	// playbacks_ended.
	Counters map[string]uint64 `json:"counters"`
}
