package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ErrPeerURL is a heartbeat's advertised URL that other nodes do not forward calls to.
var ErrPeerURL = errors.New("not a base URL (http:// or https://, a host, no user, query or fragment, path empty or /)")

// peerURLWarnEvery rate-limits the warning about one node's bad advertised URL.
const peerURLWarnEvery = 10 * time.Minute

// checkPeerURL checks a URL read from another node's heartbeat before this node forwards
// calls, with the client's token, to it: scheme http or https, a host, no userinfo, no query
// or fragment, path "" or "/". Errors wrap ErrPeerURL.
func checkPeerURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", ErrPeerURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: scheme %q", ErrPeerURL, u.Scheme)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrPeerURL)
	case u.User != nil:
		return fmt.Errorf("%w: user info", ErrPeerURL)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#"):
		return fmt.Errorf("%w: query or fragment", ErrPeerURL)
	case u.Path != "" && u.Path != "/" || u.RawPath != "":
		return fmt.Errorf("%w: path %q", ErrPeerURL, u.Path)
	}
	return nil
}

// redactedURL is s for a log line: its password hidden, at most 200 bytes.
func redactedURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		s = u.Redacted()
	} else {
		s = "(unparsable)"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// trustedPeerLocked reports whether a checked advertised URL matches cluster.trusted_peers
// (every URL does when the list is empty): its SCHEME://HOST:PORT, the port made explicit.
func (n *Node) trustedPeerLocked(s string) bool {
	if len(n.trusted) == 0 {
		return true
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	key := u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
	if strings.Contains(u.Hostname(), ":") { // IPv6
		key = u.Scheme + "://[" + strings.ToLower(u.Hostname()) + "]:" + port
	}
	for _, re := range n.trusted {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}

// redactedURLs is cluster.nats for a message: each comma-separated URL's password hidden.
func redactedURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = redactedURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}
