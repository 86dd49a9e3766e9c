package defs

import "time"

// GB28181 shows vinfer's GB28181 platform: the devices registered with it, their channels
// and the sessions it holds (package gb28181/platform).
type GB28181 interface {
	// GB28181 returns a snapshot; ok is false when no platform runs (no gb28181: section).
	GB28181() (GB28181Info, bool)
}

// GB28181Info is the platform's snapshot.
type GB28181Info struct {
	// ID, Domain and Listen are the platform's SIP identity and address.
	ID     string `json:"id"`
	Domain string `json:"domain"`
	Listen string `json:"listen"`
	// Devices are sorted by ID.
	Devices []GB28181Device `json:"devices"`
	// Counters counts registrations, keepalives, invites and refused input by kind.
	Counters map[string]uint64 `json:"counters"`
}

// GB28181Device is one device that registered.
type GB28181Device struct {
	ID string `json:"id"`
	// Online is true between a registration and its expiry, an unregistration or a keepalive
	// timeout.
	Online bool `json:"online"`
	// Addr and Transport are where its SIP messages come from (UDP or TCP).
	Addr      string `json:"addr"`
	Transport string `json:"transport"`
	// DeviceInfo's answer (GB/T 28181-2016 §A.2.6.5), when the device gave it.
	Name         string    `json:"name,omitempty"`
	Manufacturer string    `json:"manufacturer,omitempty"`
	Model        string    `json:"model,omitempty"`
	Firmware     string    `json:"firmware,omitempty"`
	Registered   time.Time `json:"registered"`
	Expires      time.Time `json:"expires"`
	LastSeen     time.Time `json:"last_seen"`
	// SumNum is the catalog's announced size; Channels what arrived of it.
	SumNum   int              `json:"sum_num"`
	Channels []GB28181Channel `json:"channels"`
}

// GB28181Channel is a catalog item and, when a stream plays it, its session.
type GB28181Channel struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"`
	// Online is the catalog's status.
	Online bool `json:"online"`
	// Streams are the streams declared on this channel.
	Streams []GB28181Stream `json:"streams,omitempty"`
}

// GB28181Stream is a signalling-mode stream's session state.
type GB28181Stream struct {
	ID string `json:"id"`
	// State: waiting (device offline or unknown), inviting, playing, retrying.
	State     string `json:"state"`
	Transport string `json:"transport"`
	SSRC      string `json:"ssrc"`
	Port      int    `json:"port,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Invites   uint64 `json:"invites"`
	LastError string `json:"last_error,omitempty"`
	// Alarms counts the device's Alarm notifications for the channel (each wakes the stream
	// when it is activity-gated); LastAlarm is the last one: time, priority, method, text.
	Alarms    uint64 `json:"alarms,omitempty"`
	LastAlarm string `json:"last_alarm,omitempty"`
}
