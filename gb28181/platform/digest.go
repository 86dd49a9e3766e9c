package platform

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Digest authentication of REGISTER (RFC 3261 §22.4 with RFC 2617's MD5 digest, GB/T
// 28181-2016 §9.1.2.1): the platform answers 401 with a nonce, the device repeats the request
// with response = MD5(MD5(user:realm:password):nonce:MD5(method:uri)) (or the qop=auth form).

const (
	nonceTTL  = 5 * time.Minute
	maxNonces = 20000
)

// nonces remembers the nonces handed out, each valid for nonceTTL.
type nonces struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (n *nonces) issue(now time.Time) string {
	var b [16]byte
	rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]time.Time{}
	}
	if len(n.m) >= maxNonces {
		for k, t := range n.m {
			if now.Sub(t) > nonceTTL || len(n.m) >= maxNonces {
				delete(n.m, k)
			}
		}
	}
	n.m[v] = now
	return v
}

// valid reports whether nonce was issued and has not expired.
func (n *nonces) valid(nonce string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.m[nonce]
	if ok && now.Sub(t) > nonceTTL {
		delete(n.m, nonce)
		return false
	}
	return ok
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
