package cascade

import (
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// catalogPart* are the most items per Catalog response MESSAGE: over UDP a part stays within
// one unfragmented datagram (sipgo refuses larger ones; §9.5.2 allows several parts with one
// SumNum).
const (
	catalogPartUDP = 1
	catalogPartTCP = 20
	maxQueries     = 8 // queries answered at once; more are answered 486
)

func keepaliveBody(sn int64, id string) []byte { return manscdp.Keepalive(sn, id) }

// onMessage answers the upper platform's queries (§9.5): Catalog of the configured channels,
// DeviceInfo and DeviceStatus of vinfer or one of them, RecordInfo of a channel (§9.7.2). The MESSAGE is answered 200 first,
// the response follows in MESSAGEs of its own.
func (u *Upstream) onMessage(req *sip.Request, tx sip.ServerTransaction) {
	if !u.allowed(req, tx) {
		return
	}
	m, err := manscdp.Decode(req.Body())
	if err != nil {
		u.log.Warn("GB28181 upstream: MESSAGE body refused", "err", err)
		u.respond(req, tx, 400, "Bad Request", nil)
		return
	}
	if m.Root != manscdp.RootQuery {
		u.respond(req, tx, 200, "OK", nil) // responses to vinfer's alarms and the like
		return
	}
	ch, known := u.channels[m.DeviceID]
	if m.DeviceID != u.cfg.DeviceID && !known {
		u.Counters.Forbidden.Add(1)
		u.log.Warn("GB28181 upstream: query of a device not configured for this platform", "cmd", m.CmdType, "device", m.DeviceID)
		u.respond(req, tx, 404, "Not Found", nil)
		return
	}
	var bodies [][]byte
	switch m.CmdType {
	case manscdp.CmdCatalog:
		bodies = u.catalog(m.SN)
	case manscdp.CmdDeviceInfo:
		name, n := "vinfer", len(u.cfg.Channels)
		if known {
			name, n = ch.Name, 1
		}
		bodies = [][]byte{manscdp.DeviceInfoResponse(m.SN, m.DeviceID, name, u.c.Version, n)}
	case manscdp.CmdDeviceStatus:
		online := !known || u.c.Online(ch.Stream)
		bodies = [][]byte{manscdp.DeviceStatusResponse(m.SN, m.DeviceID, online, time.Now())}
	case manscdp.CmdRecordInfo:
		if !known { // recordings are a channel's
			u.respond(req, tx, 404, "Not Found", nil)
			return
		}
		if bodies, err = u.recordInfo(m, ch); err != nil {
			u.log.Warn("GB28181 upstream: RecordInfo refused", "err", err)
			u.respond(req, tx, 400, "Bad Request", nil)
			return
		}
	default:
		u.respond(req, tx, 501, "Not Implemented", nil)
		return
	}
	select {
	case u.qsem <- struct{}{}:
	default:
		u.respond(req, tx, 486, "Busy Here", nil)
		return
	}
	u.respond(req, tx, 200, "OK", nil)
	u.Counters.Queries.Add(1)
	u.wg.Add(1)
	go func() {
		defer func() { <-u.qsem; u.wg.Done() }()
		for _, b := range bodies {
			if res, err := u.message(b); err != nil || res.StatusCode != 200 {
				u.log.Warn("GB28181 upstream: query response not accepted", "cmd", m.CmdType, "err", err)
				return
			}
		}
	}()
}

// catalog is the Catalog response to query sn, in parts.
func (u *Upstream) catalog(sn int64) [][]byte {
	per := catalogPartUDP
	if u.transport == "TCP" {
		per = catalogPartTCP
	}
	items := make([]manscdp.CatalogItem, 0, len(u.cfg.Channels))
	for _, ch := range u.cfg.Channels {
		items = append(items, manscdp.CatalogItem{ID: ch.ID, Name: ch.Name, ParentID: u.cfg.DeviceID, Online: u.c.Online(ch.Stream)})
	}
	var out [][]byte
	for i := 0; i < len(items); i += per {
		out = append(out, manscdp.CatalogResponse(sn, u.cfg.DeviceID, len(items), items[i:min(i+per, len(items))]))
	}
	return out
}
