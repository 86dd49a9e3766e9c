package platform

import (
	"slices"
	"time"

	"github.com/vinfer/vinfer/gb28181/manscdp"
	"github.com/vinfer/vinfer/internal/defs"
)

// MaxChannels bounds the catalog items kept per device (a huge catalog is cut, counted).
const MaxChannels = 4096

// device is a registered device (GB/T 28181-2016 §9.1). The Server's mutex guards it.
type device struct {
	id                            string
	addr                          string // host:port its requests come from (NAT: the public one)
	transport                     string // "UDP" or "TCP"
	callID                        string // of the REGISTER dialog: a new one means the device restarted
	gen                           uint64 // changes on every new registration and on every return online
	online                        bool
	registered, expires, lastSeen time.Time

	info     manscdp.Message // DeviceInfo's answer
	sumNum   int
	channels map[string]manscdp.Item
	catalogs int // parts received
}

func (d *device) snapshot(streams map[string][]defs.GB28181Stream) defs.GB28181Device {
	out := defs.GB28181Device{ID: d.id, Online: d.online, Addr: d.addr, Transport: d.transport,
		Name: d.info.DeviceName, Manufacturer: d.info.Manufacturer, Model: d.info.Model, Firmware: d.info.Firmware,
		Registered: d.registered, Expires: d.expires, LastSeen: d.lastSeen, SumNum: d.sumNum,
		Channels: []defs.GB28181Channel{}}
	seen := map[string]bool{}
	for id, it := range d.channels {
		seen[id] = true
		out.Channels = append(out.Channels, defs.GB28181Channel{ID: id, Name: it.Name, Status: it.Status,
			Online: it.Online() && d.online, Streams: streams[id]})
	}
	for id, st := range streams { // streams on channels the catalog did not list (yet)
		if !seen[id] {
			out.Channels = append(out.Channels, defs.GB28181Channel{ID: id, Streams: st})
		}
	}
	slices.SortFunc(out.Channels, func(a, b defs.GB28181Channel) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}
