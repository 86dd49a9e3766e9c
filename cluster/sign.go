package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Signed entries. With cluster.secret_file every value the node writes to the three buckets is
// the envelope {"body": VALUE, "mac": HEX}, where mac is HMAC-SHA256 (RFC 2104) keyed with the
// shared secret over KIND NUL KEY NUL VALUE (KIND: streams, owners or nodes; KEY: the entry's
// key), so a value moved to another key or bucket fails too. A heartbeat's body also carries
// its sender's wall clock (sent_ms) and a sequence number per instance: a heartbeat more than
// maxSkew away from the NATS server's stamp of it, or not newer than the last one accepted
// from its instance, is a replay and is ignored. Entries that fail are ignored (a heartbeat:
// its node is not live for this observer; an owner key: free to take; a registry entry: not
// placed), counted in ClusterView.Counters["rejected"] and logged once per key every
// rejectWarnEvery.

// Errors of opening a signed entry.
var (
	// ErrUnsigned: a value without a valid MAC of the cluster's secret.
	ErrUnsigned = errors.New("not signed with the cluster's secret")
	// ErrReplayed: a signed heartbeat that is stale or not newer than the last accepted.
	ErrReplayed = errors.New("a replayed or stale heartbeat")
	// ErrSecret: cluster.secret_file unreadable or too short.
	ErrSecret = errors.New("cluster.secret_file: unreadable or shorter than 32 bytes")
)

// minSecret is the shortest accepted shared secret, in bytes (HMAC-SHA256's output size).
const minSecret = 32

// rejectWarnEvery rate-limits the warning about one key's rejected entries.
const rejectWarnEvery = time.Minute

// Bucket kinds, bound into each MAC.
const (
	kindStreams = "streams"
	kindOwners  = "owners"
	kindNodes   = "nodes"
)

type envelope struct {
	Body json.RawMessage `json:"body"`
	At   int64           `json:"at"` // when sealed, Unix ms: an entry is fresh within maxSkew of it
	MAC  string          `json:"mac"`
}

// signer seals and opens bucket values; a nil signer passes them through.
type signer struct{ key []byte }

// loadSecret reads the shared secret (surrounding white space trimmed).
func loadSecret(path string) (*signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSecret, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < minSecret {
		return nil, fmt.Errorf("%w: %d bytes", ErrSecret, len(b))
	}
	return &signer{key: b}, nil
}

func (s *signer) mac(kind, key string, at int64, body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write([]byte(key))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, at, 10))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)
}

// seal is v's JSON, in its envelope when signing.
func (s *signer) seal(kind, key string, v any) []byte {
	body, _ := json.Marshal(v)
	if s == nil {
		return body
	}
	at := time.Now().UnixMilli()
	out, _ := json.Marshal(envelope{Body: body, At: at, MAC: hex.EncodeToString(s.mac(kind, key, at, body))})
	return out
}

// open decodes raw into v, checking its MAC when signing (ErrUnsigned).
func (s *signer) open(kind, key string, raw []byte, v any) error {
	_, err := s.openAt(kind, key, raw, v)
	return err
}

// openAt is open, also returning when the entry was sealed (zero without signing).
func (s *signer) openAt(kind, key string, raw []byte, v any) (time.Time, error) {
	if s == nil {
		return time.Time{}, json.Unmarshal(raw, v)
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil || len(e.Body) == 0 {
		return time.Time{}, ErrUnsigned
	}
	got, err := hex.DecodeString(e.MAC)
	if err != nil || !hmac.Equal(got, s.mac(kind, key, e.At, e.Body)) {
		return time.Time{}, ErrUnsigned
	}
	return time.UnixMilli(e.At), json.Unmarshal(e.Body, v)
}

// stamped is a bucket entry as read: its key, value and the NATS server's stamp.
type stamped interface {
	Key() string
	Value() []byte
	Created() time.Time
}

// openEntry opens a bucket entry (open) and, when signing, refuses it as a replay
// (ErrReplayed) when it was sealed more than maxSkew away from the NATS server's stamp of it:
// a signed value copied and written back later (a removed stream's registry entry, another
// node's old owner key) is not taken for a new one.
func (n *Node) openEntry(kind string, e stamped, v any) error {
	at, err := n.sign.openAt(kind, e.Key(), e.Value(), v)
	if err != nil || n.sign == nil {
		return err
	}
	if created := e.Created(); !created.IsZero() {
		if off := at.Sub(created); off.Abs() > n.maxSkew() {
			return fmt.Errorf("%w: sealed %v from the server's stamp (at most %v)", ErrReplayed, off.Round(time.Second), n.maxSkew())
		}
	}
	return nil
}

// skewFloor is maxSkew's least value (tests lower it).
var skewFloor = 30 * time.Second

// maxSkew is how far a signed entry's time (a heartbeat's sent_ms, an envelope's at) may be
// from the NATS server's stamp of it: 30 s, or 5 leases when longer. With signing, node clocks
// must be within it.
func (n *Node) maxSkew() time.Duration { return max(skewFloor, 5*n.lease) }

// rejectedLocked counts and logs (rate-limited per key) an entry that failed to open; n.mu
// held.
func (n *Node) rejectedLocked(kind, key string, err error) {
	n.counters["rejected"]++
	if !warnDue(n.badEntry, kind+"/"+key, rejectWarnEvery) {
		return
	}
	n.log.Warn("cluster: ignoring an entry that fails the cluster's signature check", "bucket", kind, "key", key, "err", err)
}

// warnDue reports whether a warning about key may be logged now: none was within every
// (last: key → when its warning was last logged, updated when due).
func warnDue(last map[string]time.Time, key string, every time.Duration) bool {
	now := time.Now()
	if t, ok := last[key]; ok && now.Sub(t) < every {
		return false
	}
	if _, ok := last[key]; !ok && len(last) >= warnKeysMax {
		// Keys are what writers of the NATS account chose: forget those past their interval;
		// while still full, a new key's line is left out (its counter still counts it).
		for k, t := range last {
			if now.Sub(t) >= every {
				delete(last, k)
			}
		}
		if len(last) >= warnKeysMax {
			return false
		}
	}
	last[key] = now
	return true
}

// warnKeysMax bounds each map warnDue keeps (keys chosen by whoever writes to NATS).
const warnKeysMax = 1024

// freshLocked checks a signed heartbeat against replay: sent_ms within maxSkew of the NATS
// server's stamp of the message, and a sequence number above the last accepted from its
// instance (or that very entry, same revision, read again). n.mu held.
func (n *Node) freshLocked(e interface {
	Created() time.Time
	Revision() uint64
}, b beat) error {
	if created := e.Created(); !created.IsZero() {
		if off := time.UnixMilli(b.SentMS).Sub(created); off.Abs() > n.maxSkew() {
			return fmt.Errorf("%w: sent_ms %v from the server's stamp (at most %v)", ErrReplayed, off.Round(time.Second), n.maxSkew())
		}
	}
	last, ok := n.lastSeq[b.Node]
	if ok && last.instance == b.Instance && last.seq == b.Seq && last.rev == e.Revision() {
		return nil // the same entry read again (the buckets are read again after a reconnect)
	}
	if ok && last.instance == b.Instance && b.Seq <= last.seq {
		return fmt.Errorf("%w: sequence %d, last accepted %d", ErrReplayed, b.Seq, last.seq)
	}
	n.lastSeq[b.Node] = seqMark{instance: b.Instance, seq: b.Seq, rev: e.Revision()}
	return nil
}
