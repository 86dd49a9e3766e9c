package platform

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Digest authentication of REGISTER (RFC 3261 §22.4 with RFC 2617's MD5 digest, GB/T
// 28181-2016 §9.1.2.1): the platform answers 401 with a nonce, the device repeats the request
// with response = MD5(MD5(user:realm:password):nonce:MD5(method:uri)) (or the qop=auth form).

// maxNonces bounds the nonces outstanding; beyond it the oldest are forgotten.
const maxNonces = 20000

// Nonce refusals (nonces.use).
var (
	errNonceUnknown = errors.New("nonce not issued or already used")
	errNonceExpired = errors.New("nonce expired")
	errNonceSource  = errors.New("nonce issued to another address or device")
	errNonceCount   = errors.New("nonce count not above the last one")
)

// nonce is an issued nonce: who it was issued to, when, and the last nonce count answered.
type nonce struct {
	issued time.Time
	source string // host:port of the request challenged
	user   string // the device ID challenged
	nc     uint64
}

// nonces are the nonces handed out (GB/T 28181-2016 §9.1.2.1, RFC 2617 §3.2.1): each may be
// answered once (or, with qop=auth, with a rising nc) within ttl, from the source address and
// by the user it was issued to.
type nonces struct {
	ttl time.Duration
	now func() time.Time // time.Now; tests advance it
	mu  sync.Mutex
	m   map[string]*nonce
}

func (n *nonces) issue(source, user string) string {
	now := n.now()
	var b [16]byte
	rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]*nonce{}
	}
	if len(n.m) >= maxNonces {
		for k, e := range n.m {
			if now.Sub(e.issued) > n.ttl || len(n.m) >= maxNonces {
				delete(n.m, k)
			}
		}
	}
	n.m[v] = &nonce{issued: now, source: source, user: user}
	return v
}

// use checks an answer's nonce, its nonce count (qop=auth: nc, 8 hex digits, above the last
// one) and who answers; without qop the nonce is spent. A nonce refused for its age or its
// use is forgotten; one answered from another source stays for its own device.
func (n *nonces) use(c digestCreds, source, user string) error {
	now := n.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.m[c["nonce"]]
	switch {
	case !ok:
		return errNonceUnknown
	case now.Sub(e.issued) > n.ttl:
		delete(n.m, c["nonce"])
		return errNonceExpired
	case e.source != source || e.user != user:
		return errNonceSource
	}
	if c["qop"] == "" {
		delete(n.m, c["nonce"])
		return nil
	}
	nc, err := strconv.ParseUint(c["nc"], 16, 32)
	if err != nil || len(c["nc"]) != 8 || nc <= e.nc {
		return errNonceCount
	}
	e.nc = nc
	return nil
}

// digestCreds are the fields of an Authorization header.
type digestCreds map[string]string

// parseDigest reads `Digest k="v", k=v, ...`; ok is false for another scheme or garbage.
func parseDigest(h string) (digestCreds, bool) {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Digest") || len(rest) > 4096 {
		return nil, false
	}
	c := digestCreds{}
	for rest != "" && len(c) < 32 {
		rest = strings.TrimLeft(rest, " ,\t")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimLeft(v, " ")
		if strings.HasPrefix(v, `"`) {
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				return nil, false
			}
			c[k], rest = v[1:1+end], v[2+end:]
		} else {
			val, r, _ := strings.Cut(v, ",")
			c[k], rest = strings.TrimSpace(val), r
		}
	}
	return c, c["response"] != "" && c["nonce"] != ""
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// digestResponse computes the expected response for method and the credentials' fields.
func digestResponse(c digestCreds, method, password string) string {
	ha1 := md5hex(c["username"] + ":" + c["realm"] + ":" + password)
	ha2 := md5hex(method + ":" + c["uri"])
	if qop := c["qop"]; qop == "auth" {
		return md5hex(ha1 + ":" + c["nonce"] + ":" + c["nc"] + ":" + c["cnonce"] + ":" + qop + ":" + ha2)
	}
	return md5hex(ha1 + ":" + c["nonce"] + ":" + ha2)
}

// checkDigest compares in constant time.
func checkDigest(c digestCreds, method, password string) bool {
	want := digestResponse(c, method, password)
	return subtle.ConstantTimeCompare([]byte(strings.ToLower(c["response"])), []byte(want)) == 1
}
