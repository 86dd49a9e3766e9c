package platform

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// Registration limits (GB/T 28181-2016 §9.1.2: devices register for 3600 s by default).
const (
	defaultExpires = 3600
	maxExpires     = 86400
)

// onRegister handles REGISTER (GB/T 28181-2016 §9.1, RFC 3261 §10): digest authentication,
// registration, refresh and unregistration (expires 0). The 200 OK carries the Date header
// devices set their clocks from (§9.10).
func (s *Server) onRegister(req *sip.Request, tx sip.ServerTransaction) {
	from, callID := req.From(), req.CallID()
	if from == nil || callID == nil || req.Via() == nil {
		s.Counters.BadRequest.Add(1)
		s.respond(req, tx, 400, "Bad Request")
		return
	}
	id := from.Address.User
	if !config.IsGBID(id) {
		s.Counters.BadRequest.Add(1)
		s.Logger.Warn("REGISTER from a user that is not a 20-digit GB28181 ID", "user", fmt.Sprintf("%.32q", id), "from", req.Source())
		s.respond(req, tx, 400, "Bad Request")
		return
	}
	password, allowed := s.Config.DevicePassword(id)
	if !allowed {
		s.Counters.UnknownDevice.Add(1)
		s.Logger.Warn("REGISTER from a device not in gb28181.devices refused", "device", id, "from", req.Source())
		s.respond(req, tx, 403, "Forbidden")
		return
	}
	now := time.Now()
	if password != "" && !s.authenticate(req, tx, id, password) {
		return
	}
	expires := defaultExpires
	if h := req.GetHeader("Expires"); h != nil {
		if v, err := strconv.Atoi(h.Value()); err == nil && v >= 0 {
			expires = v
		}
	} else if c := req.Contact(); c != nil {
		if v, ok := c.Params.Get("expires"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				expires = n
			}
		}
	}
	expires = min(expires, maxExpires)
	date := sip.NewHeader("Date", now.Format("2006-01-02T15:04:05.000"))
	if expires == 0 {
		s.unregister(id)
		s.respond(req, tx, 200, "OK", date, sip.NewHeader("Expires", "0"))
		return
	}
	fresh, ok := s.register(id, req, string(*callID), now, expires)
	if !ok {
		s.Counters.RegistryFull.Add(1)
		s.Logger.Warn("REGISTER refused: gb28181.max_devices reached", "device", id, "max_devices", s.Config.MaxDevices)
		s.respond(req, tx, 503, "Service Unavailable")
		return
	}
	s.Counters.Registers.Add(1)
	s.respond(req, tx, 200, "OK", date, sip.NewHeader("Expires", strconv.Itoa(expires)))
	if fresh {
		s.kick(id)
		s.wg.Add(1)
		go func() { // a newly registered device: ask what it is and what it has
			defer s.wg.Done()
			s.query(id, "DeviceInfo")
			s.query(id, "Catalog")
		}()
	}
}

// authenticate checks req's digest (GB/T 28181-2016 §9.1.2.1) for device id: without one,
// or with a nonce refused (unknown, spent, expired, issued to another address), it answers
// 401 with a fresh challenge; with a wrong or unusable one 403. It reports whether req may go
// on; when not, it has answered.
func (s *Server) authenticate(req *sip.Request, tx sip.ServerTransaction, id, password string) bool {
	h := req.GetHeader("Authorization")
	if h == nil {
		s.challenge(req, tx, id, false)
		return false
	}
	creds, ok := parseDigest(h.Value())
	if !ok || creds["username"] != id || creds["realm"] != s.Config.Domain {
		s.Counters.BadDigest.Add(1)
		s.Logger.Warn("request with unusable credentials refused", "method", req.Method, "device", id, "from", req.Source())
		s.respond(req, tx, 403, "Forbidden")
		return false
	}
	if err := s.nonces.use(creds, req.Source(), id); err != nil {
		// a replay, an answer from elsewhere, or a late one: a fresh challenge, to this source
		s.Counters.NonceRefused.Add(1)
		s.limited.log("nonce_refused", "digest nonce refused, challenged again", "method", req.Method, "device", id, "from", req.Source(), "why", err)
		s.challenge(req, tx, id, errors.Is(err, errNonceExpired))
		return false
	}
	if !checkDigest(creds, string(req.Method), password) {
		s.Counters.BadDigest.Add(1)
		s.Logger.Warn("request with a wrong digest refused (check the device's password)", "method", req.Method, "device", id, "from", req.Source())
		s.respond(req, tx, 403, "Forbidden")
		return false
	}
	return true
}

// challenge answers 401 with a new nonce bound to the request's source and user (RFC 3261
// §22.4); stale when the old one expired. The header is written as GB/T 28181-2016's examples
// write it, without spaces between the parameters (`Digest realm="…",nonce="…",algorithm=MD5`):
// some device firmware parses no other form.
func (s *Server) challenge(req *sip.Request, tx sip.ServerTransaction, id string, stale bool) {
	s.Counters.Challenges.Add(1)
	v := fmt.Sprintf(`Digest realm="%s",nonce="%s",algorithm=MD5`, s.Config.Domain, s.nonces.issue(req.Source(), id))
	if stale {
		v += ",stale=true"
	}
	s.respond(req, tx, 401, "Unauthorized", sip.NewHeader("WWW-Authenticate", v))
}

// register records a registration. fresh is true for a new registration (new device, a new
// Call-ID: the device restarted, or a device offline until now): its sessions are stale and
// its channels are invited again.
func (s *Server) register(id string, req *sip.Request, callID string, now time.Time, expires int) (fresh, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[id]
	if d == nil {
		if len(s.devices) >= s.Config.MaxDevices {
			return false, false
		}
		d = &device{id: id, channels: map[string]manscdp.Item{}}
		s.devices[id] = d
	}
	fresh = !d.online || d.callID != callID || d.addr != req.Source()
	if fresh {
		d.gen++
		d.registered = now
		s.Logger.Info("device registered", "device", id, "from", req.Source(), "transport", req.Transport(), "expires", expires)
	}
	d.addr, d.transport, d.callID = req.Source(), req.Transport(), callID
	d.online, d.expires, d.lastSeen = true, now.Add(time.Duration(expires)*time.Second), now
	return fresh, true
}

// unregister ends a registration (expires 0): the device is offline, its sessions end.
func (s *Server) unregister(id string) {
	s.mu.Lock()
	d := s.devices[id]
	if d != nil {
		d.expires = time.Now() // its messages are refused until it registers again
	}
	if d != nil && d.online {
		d.online = false
		s.Counters.Unregisters.Add(1)
		s.Logger.Info("device unregistered", "device", id)
	}
	s.mu.Unlock()
	s.kick(id)
}
