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

// secretParams are query and path parameters that carry credentials: cameras' (e.g. Dahua's
// ?user=admin&password=..., or /live;password=...) and presigned URLs' (S3, GCS, Azure SAS,
// CloudFront), compared in lower case.
var secretParams = []string{"user", "username", "password", "passwd", "pwd", "pass", "passphrase",
	"auth", "authorization", "token", "access_token", "accesstoken", "refresh_token", "id_token",
	"secret", "client_secret", "key", "apikey", "api_key", "api-key", "x-api-key", "private_key",
	"signature", "sig", "session", "sessionid", "credential", "credentials", "jwt", "code",
	"x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid",
	"x-goog-signature", "x-goog-credential", "key-pair-id", "security-token", "securitytoken"}

// userParams are the secret parameters that hold a user name: their values are redacted where
// they are quoted as the parameter (user=NAME), not as a word anywhere in a message.
var userParams = []string{"user", "username"}

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
	if esc := u.EscapedPath(); strings.Contains(esc, ";") {
		if red := redactPathParams(esc); red != esc {
			if p, err := url.PathUnescape(red); err == nil {
				u.Path, u.RawPath = p, red
			} else {
				u.Path, u.RawPath = "/"+Mark, ""
			}
		}
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

// redactPathParams replaces the values of secret path parameters (RFC 2326 §3.2:
// /path;password=...;stream=1/track) in an escaped path.
func redactPathParams(esc string) string {
	segs := strings.Split(esc, "/")
	for i, seg := range segs {
		params := strings.Split(seg, ";")
		for j := 1; j < len(params); j++ {
			if k, _, ok := strings.Cut(params[j], "="); ok && isSecret(k) {
				params[j] = k + "=" + Mark
			}
		}
		segs[i] = strings.Join(params, ";")
	}
	return strings.Join(segs, "/")
}

func isSecret(param string) bool { return inList(param, secretParams) }

func isUserParam(param string) bool { return inList(param, userParams) }

// inList reports whether the unescaped, lower-cased param is in list.
func inList(param string, list []string) bool {
	p, err := url.QueryUnescape(param)
	if err != nil {
		p = param
	}
	return slices.Contains(list, strings.ToLower(p))
}

// secretPairs returns the secret query and path parameters of a parsed URL as written (escaped).
func secretPairs(u *url.URL) [][2]string {
	var out [][2]string
	add := func(kv string) {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && v != Mark && isSecret(k) {
			out = append(out, [2]string{k, v})
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		add(kv)
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		for _, kv := range strings.Split(seg, ";")[1:] {
			add(kv)
		}
	}
	return out
}

// replaceUserForms replaces the user name where a message quotes it as one: followed by ':' or
// '@' (user:password, user@host) and not preceded by a letter or digit (so that a user "cam" does
// not touch "webcam:"). Elsewhere the name is left alone: it may be an ordinary word ("URL",
// "source", "stream") and is no secret on its own.
func replaceUserForms(msg, name string) string {
	if name == "" || name == Mark {
		return msg
	}
	return rewrite(msg, name, func(msg string, i int) (int, string, int) {
		end := i + len(name)
		before := i == 0 || !isWordByte(msg[i-1])
		after := end < len(msg) && (msg[end] == ':' || msg[end] == '@')
		if before && after {
			return i, Mark, end
		}
		return end, "", end
	})
}

// replaceValue replaces secret where it occurs as a value of its own, not inside a longer word:
// an end of secret that is a letter or digit must not touch another one in msg (a password "p"
// leaves "tp254" alone; "s3cret" goes in "user:s3cret@", "pass=s3cret", "\"s3cret\"").
func replaceValue(msg, secret string) string {
	if secret == "" {
		return msg
	}
	first, last := isWordByte(secret[0]), isWordByte(secret[len(secret)-1])
	return rewrite(msg, secret, func(msg string, i int) (int, string, int) {
		end := i + len(secret)
		if (!first || i == 0 || !isWordByte(msg[i-1])) && (!last || end == len(msg) || !isWordByte(msg[end])) {
			return i, Mark, end
		}
		return i + 1, "", i + 1 // a later occurrence may start inside this one
	})
}

// rewrite copies msg, handing each occurrence of sep (non-empty), left to right, to at: with sep
// at rest[i:], at returns how much of rest to copy (rest[:keep]), what to write after it, and
// where the scan goes on (rest[next:], next > i).
func rewrite(msg, sep string, at func(rest string, i int) (keep int, repl string, next int)) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, sep)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		keep, repl, next := at(msg, i)
		b.WriteString(msg[:keep])
		b.WriteString(repl)
		msg = msg[next:]
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
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
// opening the source): the raw URL becomes the redacted one, and the password and the values of
// password-like query and path parameters become REDACTED wherever they still appear as values
// (not inside a longer word: replaceValue). The user
// name only where it is quoted as one (user:…, user@…, user=…): it may be an ordinary word.
// Credentials of other URLs the message quotes (a peer's text) go too: Quoted.
func Message(msg, raw string) string { return Quoted(sourceMessage(msg, raw)) }

func sourceMessage(msg, raw string) string {
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
			msg = replaceValue(msg, p)
			if _, esc, ok := strings.Cut(u.User.String(), ":"); ok && esc != p {
				msg = replaceValue(msg, esc) // as written in the URL: percent-encoded
			}
		}
		msg = strings.ReplaceAll(msg, u.User.String()+"@", Mark+"@")
		msg = replaceUserForms(msg, u.User.Username())
	}
	for _, kv := range secretPairs(u) {
		k, v := kv[0], kv[1]
		vals := []string{v}
		if uv, err := url.QueryUnescape(v); err == nil && uv != v {
			vals = append(vals, uv)
		}
		for _, v := range vals {
			msg = strings.ReplaceAll(msg, k+"="+v, k+"="+Mark)
			if len(v) >= 4 && !isUserParam(k) { // shorter values would redact ordinary words
				msg = replaceValue(msg, v)
			}
		}
	}
	return msg
}

// scrubUserinfo removes the user information of an unparsable URL from msg: the whole, the
// password, every prefix of the password up to a separator and every piece of the password
// between separators of three bytes or more (parse errors quote such pieces, e.g. `invalid port
// ":p4ss"`); the user name where it is quoted as one (replaceUserForms).
func scrubUserinfo(msg, info string) string {
	pieces := []string{info}
	user, pw, ok := strings.Cut(info, ":")
	if ok {
		pieces = append(pieces, pw)
		for i := range len(pw) {
			if strings.IndexByte(":#/?@", pw[i]) >= 0 && i >= 3 {
				pieces = append(pieces, pw[:i])
			}
		}
		for _, p := range strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune(":#/?@", r) }) {
			if len(p) >= 3 {
				pieces = append(pieces, p)
			}
		}
	}
	slices.SortFunc(pieces, func(a, b string) int { return len(b) - len(a) }) // wholes before parts
	for _, p := range pieces {
		if p != "" {
			msg = replaceValue(msg, p)
		}
	}
	return replaceUserForms(msg, user)
}
