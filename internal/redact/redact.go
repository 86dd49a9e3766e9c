// Package redact removes credentials from source URLs and from messages that quote them: the one
// place every log line, API response, error and metrics label goes through before it shows a URL.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Mark replaces credentials.
const Mark = "REDACTED"

// secretParams are query parameters that cameras use for credentials (e.g. Dahua's
// ?user=admin&password=...), compared in lower case.
var secretParams = []string{"user", "username", "password", "passwd", "pwd", "pass", "passphrase",
	"auth", "authorization", "token", "access_token", "accesstoken", "refresh_token", "id_token",
	"secret", "client_secret", "key", "apikey", "api_key", "api-key", "x-api-key", "private_key",
	"signature", "sig", "session", "sessionid", "credential", "credentials", "jwt", "code"}

// URL returns url with its credentials replaced, for logs, errors and metrics labels: the
// user information (rtsp://user:pass@host → rtsp://REDACTED@host) and the values of query
// parameters that commonly carry them (password, token, ...). A URL that does not parse is
// reduced to its scheme and host part with any user information removed.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return redactUnparsed(raw)
	}
	if u.User != nil {
		u.User = url.User(Mark)
	}
	if u.RawQuery != "" {
		q := strings.Split(u.RawQuery, "&")
		for i, kv := range q {
			k, _, ok := strings.Cut(kv, "=")
			if ok && isSecret(k) {
				q[i] = k + "=" + Mark
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
		return Mark
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest + "/" + Mark
}

// Source returns a stream source fit for responses and logs: network URLs with their
// credentials replaced (user information and password-like query parameters, see URL);
// file paths unchanged, since they carry none.
func Source(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if strings.EqualFold(scheme, "file") && !strings.ContainsAny(rest, "@?") {
		return raw
	}
	return URL(raw)
}

// Message removes a source's secrets from a message that may quote it (an error from
// opening the source): the raw URL becomes the redacted one, and the password, the user
// information and the values of password-like query parameters become REDACTED wherever they
// still appear.
func Message(msg, raw string) string {
	if !strings.Contains(raw, "://") {
		return msg
	}
	red := Source(raw)
	if red != raw {
		msg = strings.ReplaceAll(msg, raw, red)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable URL (a password with '/', '#' or '%'): drop what lies between :// and @.
		i, at := strings.Index(raw, "://"), strings.LastIndex(raw, "@")
		if i >= 0 && i+3 < at {
			return scrubUserinfo(msg, raw[i+3:at])
		}
		return msg
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, Mark)
		}
		msg = strings.ReplaceAll(msg, u.User.String()+"@", Mark+"@")
	}
	if ru, err := url.Parse(red); err == nil && u.RawQuery != "" {
		rq := ru.Query()
		for k, vs := range u.Query() {
			if rq.Get(k) != Mark {
				continue
			}
			for _, v := range vs {
				msg = strings.ReplaceAll(msg, k+"="+v, k+"="+Mark)
				if len(v) >= 4 { // shorter values would mangle unrelated words
					msg = strings.ReplaceAll(msg, v, Mark)
				}
			}
		}
	}
	return msg
}

// scrubUserinfo removes the user information of an unparsable URL from msg: the whole, the
// password, every prefix of the password up to a separator and every piece between separators
// of three bytes or more (parse errors quote such pieces, e.g. `invalid port ":p4ss"`).
func scrubUserinfo(msg, info string) string {
	pieces := []string{info}
	if _, pw, ok := strings.Cut(info, ":"); ok {
		pieces = append(pieces, pw)
		for i := range len(pw) {
			if strings.IndexByte(":#/?@", pw[i]) >= 0 && i >= 3 {
				pieces = append(pieces, pw[:i])
			}
		}
	}
	for _, p := range strings.FieldsFunc(info, func(r rune) bool { return strings.ContainsRune(":#/?@", r) }) {
		if len(p) >= 3 {
			pieces = append(pieces, p)
		}
	}
	slices.SortFunc(pieces, func(a, b string) int { return len(b) - len(a) }) // wholes before parts
	for _, p := range pieces {
		msg = strings.ReplaceAll(msg, p, Mark)
	}
	return msg
}
