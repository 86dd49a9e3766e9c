package rtsp

import (
	"net/url"
	"strings"
)

// redacted replaces credentials in what Redact returns.
const redacted = "REDACTED"

// secretParams are query parameters that cameras use for credentials (e.g. Dahua's
// ?user=admin&password=...), compared in lower case.
var secretParams = []string{"user", "username", "password", "passwd", "pwd", "pass", "auth", "token", "secret", "key", "signature", "sig"}

// Redact returns url with its credentials replaced, for logs, errors and metrics labels: the
// user information (rtsp://user:pass@host → rtsp://REDACTED@host) and the values of query
// parameters that commonly carry them (password, token, ...). A URL that does not parse is
// reduced to its scheme and host part with any user information removed.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return redactUnparsed(raw)
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if u.RawQuery != "" {
		q := strings.Split(u.RawQuery, "&")
		for i, kv := range q {
			k, _, ok := strings.Cut(kv, "=")
			if ok && isSecret(k) {
				q[i] = k + "=" + redacted
			}
		}
		u.RawQuery = strings.Join(q, "&")
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

func isSecret(param string) bool {
	p, err := url.QueryUnescape(param)
	if err != nil {
		p = param
	}
	p = strings.ToLower(p)
	for _, s := range secretParams {
		if p == s {
			return true
		}
	}
	return false
}

// redactUnparsed keeps "scheme://host" of a URL url.Parse rejects (passwords with '#', '%' or
// '/' make that common), dropping everything that may hold credentials.
func redactUnparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return redacted
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest + "/" + redacted
}
