package platform

import "sync/atomic"

// Counters count what the platform did and what it refused; every refusal of bad input has
// its counter (the API's "counters").
type Counters struct {
	Registers       atomic.Uint64 // REGISTER answered 200
	Unregisters     atomic.Uint64 // REGISTER with expires 0
	Challenges      atomic.Uint64 // 401 with a fresh nonce
	BadDigest       atomic.Uint64 // wrong digest answered 403
	NonceRefused    atomic.Uint64 // digests on a nonce unknown, spent, expired or issued to another address (401 again)
	UnknownDevice   atomic.Uint64 // a device not allowed to register (403), or a MESSAGE from one not registered
	RegistryFull    atomic.Uint64 // REGISTER refused with 503: MaxDevices reached
	WrongSource     atomic.Uint64 // MESSAGEs and BYEs not from the registered device's address (403)
	UnknownCallID   atomic.Uint64 // BYEs and MediaStatus naming no session (ignored)
	TinyDatagrams   atomic.Uint64 // UDP datagrams of 4 bytes or less that are not a CRLF keepalive (dropped)
	TCPRefused      atomic.Uint64 // SIP TCP connections refused: max_tcp_conns or max_tcp_conns_per_host reached
	TCPTimeouts     atomic.Uint64 // SIP TCP connections closed: idle, or a message not complete in time
	TCPAcceptErrors atomic.Uint64 // SIP TCP accepts failed (out of descriptors), retried
	BadRequest      atomic.Uint64 // requests missing headers or with bad IDs (400)
	Malformed       atomic.Uint64 // UDP datagrams that are not SIP (dropped: no Via to answer), SIP TCP that does not parse (closed)
	StrayResponses  atomic.Uint64 // SIP responses matching no transaction of the platform (dropped)
	BadXML          atomic.Uint64 // MANSCDP bodies refused (400, 413 when too large)
	Keepalives      atomic.Uint64
	Catalogs        atomic.Uint64 // Catalog response parts
	CatalogFull     atomic.Uint64 // catalog items dropped beyond MaxChannels
	DeviceInfos     atomic.Uint64
	MediaStatus     atomic.Uint64
	Offline         atomic.Uint64 // devices that went offline (keepalive timeout, expiry)
	Invites         atomic.Uint64 // INVITEs sent
	InviteFailures  atomic.Uint64 // INVITEs without a usable 2xx
	SSRCMismatch    atomic.Uint64 // answers whose y= differs from the offer
	MediaTimeouts   atomic.Uint64 // sessions ended for lack of media
	Byes            atomic.Uint64 // BYEs sent
	Cancels         atomic.Uint64 // CANCELs sent (INVITEs given up after a provisional answer)
	ByesReceived    atomic.Uint64 // BYEs from devices
	Alarms          atomic.Uint64 // Alarm notifications (§A.2.5.5) from registered devices
	AlarmWakes      atomic.Uint64 // streams an alarm woke
	AlarmUnmatched  atomic.Uint64 // alarms naming a channel no stream plays
	AlarmNotWoken   atomic.Uint64 // streams an alarm named that could not wake (no activity gating)
	// AlarmAnswersDropped counts alarms not answered with a Response: too many in flight.
	AlarmAnswersDropped atomic.Uint64
}

// Map returns the counters by name.
func (c *Counters) Map() map[string]uint64 {
	return map[string]uint64{
		"registers": c.Registers.Load(), "unregisters": c.Unregisters.Load(), "challenges": c.Challenges.Load(),
		"bad_digest": c.BadDigest.Load(), "nonce_refused": c.NonceRefused.Load(), "unknown_device": c.UnknownDevice.Load(), "registry_full": c.RegistryFull.Load(),
		"wrong_source": c.WrongSource.Load(), "unknown_call_id": c.UnknownCallID.Load(), "tiny_datagrams": c.TinyDatagrams.Load(),
		"tcp_refused": c.TCPRefused.Load(), "tcp_timeouts": c.TCPTimeouts.Load(), "tcp_accept_errors": c.TCPAcceptErrors.Load(),
		"bad_request": c.BadRequest.Load(), "malformed": c.Malformed.Load(), "stray_responses": c.StrayResponses.Load(), "bad_xml": c.BadXML.Load(),
		"keepalives": c.Keepalives.Load(), "catalogs": c.Catalogs.Load(), "catalog_full": c.CatalogFull.Load(),
		"device_infos": c.DeviceInfos.Load(), "media_status": c.MediaStatus.Load(), "offline": c.Offline.Load(),
		"invites": c.Invites.Load(), "invite_failures": c.InviteFailures.Load(), "ssrc_mismatch": c.SSRCMismatch.Load(),
		"media_timeouts": c.MediaTimeouts.Load(), "byes": c.Byes.Load(), "cancels": c.Cancels.Load(), "byes_received": c.ByesReceived.Load(),
		"alarms": c.Alarms.Load(), "alarm_wakes": c.AlarmWakes.Load(), "alarm_unmatched": c.AlarmUnmatched.Load(),
		"alarm_not_woken": c.AlarmNotWoken.Load(), "alarm_answers_dropped": c.AlarmAnswersDropped.Load(),
	}
}
