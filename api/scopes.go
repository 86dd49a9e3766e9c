package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
)

// Scope is what a token may do; each scope includes those below it (config.Scopes).
type Scope int

// Scopes, weakest first.
const (
	ScopeViewer   Scope = iota + 1 // read: streams, scenes, snapshots, events, evidence, models, metrics
	ScopeOperator                  // also add and remove streams, replace scenes
	ScopeAdmin                     // also reload models, the cluster, debug (pprof, expvar)
)

func (s Scope) String() string {
	if s >= ScopeViewer && s <= ScopeAdmin {
		return config.Scopes[s-1]
	}
	return "none"
}

// parseScope reads a config scope name.
func parseScope(name string) (Scope, error) {
	if i := slices.Index(config.Scopes, name); i >= 0 {
		return Scope(i + 1), nil
	}
	return 0, fmt.Errorf("scope %q: one of %v", name, config.Scopes)
}

// perStream says how a route is held to the streams of a token limited to some.
type perStream int

const (
	notPerStream perStream = iota // not about one stream: a limited token is refused
	pathID                        // the {id} in the path must be one of the token's
	queryStream                   // ?stream=ID must be given and be one of the token's
	bodyID                        // the id in the body: the handler checks it (tokenAllows)
	listed                        // a list: the handler shows the token's streams only
	open                          // about no stream at all (the route list, the 404 answer)
)

// access is what one method of one route needs.
type access struct {
	scope   Scope
	streams perStream
}

// routeAccess declares, for every route the server registers behind the token check (by its
// ServeMux pattern) and every method it serves, the scope it needs ("*": any method). A route
// or method missing here needs admin and no stream limit (fail closed); TestRouteScopes fails
// when a registered route is missing, or serves a method that is.
var routeAccess = map[string]map[string]access{
	"/api":                             {"*": {ScopeViewer, open}}, // read-only whatever the method
	"/api/":                            {"*": {ScopeViewer, open}}, // the 404 answer
	"/api/streams":                     {"GET": {ScopeViewer, listed}, "POST": {ScopeOperator, bodyID}},
	"/api/streams/{id}":                {"GET": {ScopeViewer, pathID}, "DELETE": {ScopeOperator, pathID}},
	"/api/streams/{id}/snapshot.jpg":   {"GET": {ScopeViewer, pathID}},
	"/api/streams/{id}/scene":          {"GET": {ScopeViewer, pathID}, "PUT": {ScopeOperator, pathID}},
	"/api/streams/{id}/wake":           {"POST": {ScopeOperator, pathID}},
	"/api/streams/{id}/whep":           {"POST": {ScopeViewer, pathID}}, // api/live.go
	"/api/streams/{id}/whep/{session}": {"DELETE": {ScopeViewer, pathID}},
	"/api/streams/{id}/mse":            {"GET": {ScopeViewer, pathID}},
	"/api/cluster":                     {"GET": {ScopeAdmin, notPerStream}},
	"/api/models":                      {"GET": {ScopeViewer, notPerStream}},
	"/api/models/{name}":               {"GET": {ScopeViewer, notPerStream}},
	"/api/models/{name}/reload":        {"POST": {ScopeAdmin, notPerStream}},
	"/api/gb28181/devices":             {"GET": {ScopeViewer, notPerStream}},
	"/api/gb28181/upstream":            {"GET": {ScopeViewer, notPerStream}},
	"/api/onvif/cameras":               {"GET": {ScopeViewer, notPerStream}},
	"/api/onvif/discover":              {"POST": {ScopeOperator, notPerStream}}, // sends probes
	"/api/onvif/cameras/{id}/profiles": {"POST": {ScopeOperator, notPerStream}}, // takes credentials
	"/api/sinks":                       {"GET": {ScopeViewer, notPerStream}},    // the sinks' state
	"/api/events":                      {"GET": {ScopeViewer, queryStream}},
	"/api/ws":                          {"GET": {ScopeViewer, queryStream}},
	"/api/evidence":                    {"GET": {ScopeViewer, queryStream}},
	"/api/evidence/{id}":               {"GET": {ScopeViewer, notPerStream}},
	"/api/evidence/{id}/clip.mp4":      {"GET": {ScopeViewer, notPerStream}},
	"/api/evidence/{id}/snapshot.jpg":  {"GET": {ScopeViewer, notPerStream}},
	"/api/evidence/{id}/frame.jpg":     {"GET": {ScopeViewer, notPerStream}},
	"/api/events/{id}":                 {"GET": {ScopeViewer, notPerStream}},
	"/api/events/{id}/clip.mp4":        {"GET": {ScopeViewer, notPerStream}},
	"/api/events/{id}/snapshot.jpg":    {"GET": {ScopeViewer, notPerStream}},
	"/api/events/{id}/frame.jpg":       {"GET": {ScopeViewer, notPerStream}},
	"/metrics":                         {"*": {ScopeViewer, notPerStream}}, // read-only whatever the method
	"/debug/pprof/":                    {"*": {ScopeAdmin, notPerStream}},
	"/debug/pprof/cmdline":             {"*": {ScopeAdmin, notPerStream}},
	"/debug/pprof/profile":             {"*": {ScopeAdmin, notPerStream}},
	"/debug/pprof/symbol":              {"*": {ScopeAdmin, notPerStream}},
	"/debug/pprof/trace":               {"*": {ScopeAdmin, notPerStream}},
	"/debug/vars":                      {"*": {ScopeAdmin, notPerStream}},
}

// accessOf returns what a request to pattern with method needs (HEAD as GET); declared is
// false for a route or method missing from routeAccess (then: admin, no stream limit).
func accessOf(pattern, method string) (a access, declared bool) {
	m := routeAccess[pattern]
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if a, ok := m[method]; ok {
		return a, true
	}
	if a, ok := m["*"]; ok {
		return a, true
	}
	return access{ScopeAdmin, notPerStream}, false
}

// credential is one accepted bearer token.
type credential struct {
	label   string
	secret  []byte
	scope   Scope
	streams []string // empty: every stream
	bucket  *bucket  // nil: no rate limit
}

// credentials builds the accepted tokens: Token as the admin labelled "token", then Tokens.
func (s *Server) credentials() ([]*credential, error) {
	var out []*credential
	if s.Token != "" {
		out = append(out, &credential{label: "token", secret: []byte(s.Token), scope: ScopeAdmin})
	}
	if err := config.ValidateTokens(s.Tokens, s.Token); err != nil {
		return nil, err
	}
	for _, t := range s.Tokens {
		sc, err := parseScope(t.Scope)
		if err != nil {
			return nil, fmt.Errorf("token %s: %w", t.Label, err)
		}
		c := &credential{label: t.Label, secret: []byte(t.Token), scope: sc, streams: t.Streams}
		if t.RatePerMinute > 0 {
			c.bucket = newBucket(t.RatePerMinute, time.Minute)
		}
		out = append(out, c)
	}
	return out, nil
}

// match returns the credential whose secret is got, comparing with every one in constant time.
func match(creds []*credential, got string) *credential {
	var found *credential
	for _, c := range creds {
		if subtle.ConstantTimeCompare([]byte(got), c.secret) == 1 {
			found = c
		}
	}
	return found
}

// allows reports whether the credential may see or change stream id.
func (c *credential) allows(id string) bool {
	return c == nil || len(c.streams) == 0 || slices.Contains(c.streams, id)
}

type credKey struct{}

// tokenAllows reports whether the request's token may see or change stream id (true without
// tokens, or for a token not limited to streams).
func tokenAllows(r *http.Request, id string) bool {
	c, _ := r.Context().Value(credKey{}).(*credential)
	return c.allows(id)
}

// tokenLimited reports whether the request's token is limited to some streams.
func tokenLimited(r *http.Request) bool {
	c, _ := r.Context().Value(credKey{}).(*credential)
	return c != nil && len(c.streams) > 0
}

// permit answers a request the credential may not make (403, or 429 with Retry-After past its
// rate) and reports false.
func (s *Server) permit(w http.ResponseWriter, r *http.Request, c *credential) bool {
	a, declared := accessOf(r.Pattern, r.Method)
	if c.scope < a.scope {
		how := ""
		if !declared {
			how = " (the route declares no scope for this method)"
		}
		writeError(w, http.StatusForbidden, "token %q (%s) may not %s %s: it needs the %s scope%s",
			c.label, c.scope, r.Method, r.URL.Path, a.scope, how)
		return false
	}
	if len(c.streams) > 0 {
		switch a.streams {
		case notPerStream:
			writeError(w, http.StatusForbidden, "token %q is limited to streams %v: %s %s is not about one of them", c.label, c.streams, r.Method, r.URL.Path)
			return false
		case pathID:
			if id := r.PathValue("id"); !c.allows(id) {
				writeError(w, http.StatusForbidden, "token %q may not reach stream %q (it is limited to %v)", c.label, id, c.streams)
				return false
			}
		case queryStream:
			if id := r.URL.Query().Get("stream"); !c.allows(id) || id == "" {
				writeError(w, http.StatusForbidden, "token %q is limited to streams %v: name one with ?stream=ID", c.label, c.streams)
				return false
			}
		}
	}
	if c.bucket != nil && changesState(r) && r.Method != http.MethodGet {
		if wait := c.bucket.take(time.Now()); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			writeError(w, http.StatusTooManyRequests, "token %q: more than %d state-changing calls a minute; retry after %v",
				c.label, c.bucket.max, wait.Round(time.Second))
			return false
		}
	}
	return true
}

// bucket is a token bucket: max calls, refilled at max per period.
type bucket struct {
	mu     sync.Mutex
	max    int
	period time.Duration
	level  float64
	last   time.Time
}

func newBucket(max int, period time.Duration) *bucket {
	return &bucket{max: max, period: period, level: float64(max)}
}

// take spends one call at now, or returns how long until one is available.
func (b *bucket) take(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	rate := float64(b.max) / float64(b.period) // calls per nanosecond
	if !b.last.IsZero() {
		b.level = min(float64(b.max), b.level+float64(now.Sub(b.last))*rate)
	}
	b.last = now
	if b.level >= 1 {
		b.level--
		return 0
	}
	return time.Duration((1 - b.level) / rate)
}

type whoKey struct{}

// withWho gives the request a place where the token check writes the token's label, for the
// audit line written after the handler.
func withWho(r *http.Request) (*http.Request, *string) {
	who := new(string)
	return r.WithContext(context.WithValue(r.Context(), whoKey{}, who)), who
}
