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
	// Subscriptions counts alarm SUBSCRIBEs accepted.
	Subscriptions atomic.Int64
	// MediaDropped counts access units a slow session's queue dropped.
	MediaDropped atomic.Int64
}
