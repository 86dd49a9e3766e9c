package cascade

import "sync/atomic"

// Counters are one upstream's figures, for metrics and tests.
type Counters struct {
	// Registrations counts accepted REGISTERs (first ones and refreshes); Refused those the
	// upper platform refused (401 after the digest, 403: a wrong password or device ID);
	// RegisterErrors those unanswered or failed otherwise.
	Registrations, Refused, RegisterErrors atomic.Int64
	// Keepalives counts keepalives answered 200; KeepaliveFailures the others.
	Keepalives, KeepaliveFailures atomic.Int64
	// Queries counts Catalog, DeviceInfo and DeviceStatus queries answered; Forbidden
	// requests refused for their source, sender or channel.
	Queries, Forbidden atomic.Int64
	// Invites counts sessions started, Byes sessions ended by BYE.
	Invites, Byes atomic.Int64
	// AlarmsSent counts alarms the upper platform accepted (MESSAGE or NOTIFY answered 200);
	// AlarmsDropped alarms not delivered (not registered, queue full, refused, unanswered).
	AlarmsSent, AlarmsDropped atomic.Int64
	// AlarmsFiltered counts alarms no alarm subscription's filter (priorities, methods) wanted.
	AlarmsFiltered atomic.Int64
	// Subscriptions counts alarm SUBSCRIBEs accepted.
	Subscriptions atomic.Int64
	// MediaDropped counts access units a slow session's queue dropped.
	MediaDropped atomic.Int64
	// TCPRefused counts SIP TCP connections closed on accept: not from the upper platform's
	// address, or beyond 8 from it (tcplimit.go).
	TCPRefused atomic.Int64
	// StrayResponses counts SIP responses matching no transaction, dropped (siplog.go).
	StrayResponses atomic.Int64
	// Playbacks counts playbacks and downloads started (within Invites); PlaybacksEnded those
	// sent to the end of their range (MediaStatus 121 sent).
	Playbacks, PlaybacksEnded atomic.Int64
}

// Map returns the counters by name (defs.GB28181Upstream.Counters).
func (c *Counters) Map() map[string]uint64 {
	m := map[string]uint64{}
	for _, e := range []struct {
		k string
		v *atomic.Int64
	}{{"registrations", &c.Registrations}, {"refused", &c.Refused}, {"register_errors", &c.RegisterErrors},
		{"keepalives", &c.Keepalives}, {"keepalive_failures", &c.KeepaliveFailures}, {"queries", &c.Queries},
		{"forbidden", &c.Forbidden}, {"invites", &c.Invites}, {"byes", &c.Byes}, {"alarms_sent", &c.AlarmsSent},
		{"alarms_dropped", &c.AlarmsDropped}, {"alarms_filtered", &c.AlarmsFiltered}, {"subscriptions", &c.Subscriptions}, {"media_dropped", &c.MediaDropped},
		{"tcp_refused", &c.TCPRefused}, {"stray_responses", &c.StrayResponses},
		{"playbacks", &c.Playbacks}, {"playbacks_ended", &c.PlaybacksEnded}} {
		m[e.k] = uint64(e.v.Load())
	}
	return m
}
