package api

import (
	"net/url"
	"strings"

	"github.com/vinfer/vinfer/source/rtsp"
)

// redactSource returns a stream source fit for responses and logs: network URLs with their
// credentials replaced (user information and password-like query parameters, see rtsp.Redact);
// file paths unchanged, since they carry none.
func redactSource(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if strings.EqualFold(scheme, "file") && !strings.ContainsAny(rest, "@?") {
		return raw
	}
	return rtsp.Redact(raw)
}

// scrubMessage removes a source's secrets from a message that may quote it (an error from
// opening the source): the raw URL becomes the redacted one, and the password, the user
// information and the values of password-like query parameters become REDACTED wherever they
// still appear.
func scrubMessage(msg, raw string) string {
	if !strings.Contains(raw, "://") {
		return msg
	}
	red := redactSource(raw)
	if red != raw {
		msg = strings.ReplaceAll(msg, raw, red)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable URL (a password with '/', '#' or '%'): drop what lies between :// and @.
		i, at := strings.Index(raw, "://"), strings.LastIndex(raw, "@")
		if i >= 0 && i+3 < at {
			msg = strings.ReplaceAll(msg, raw[i+3:at], "REDACTED")
		}
		return msg
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "REDACTED")
		}
		msg = strings.ReplaceAll(msg, u.User.String()+"@", "REDACTED@")
	}
	if ru, err := url.Parse(red); err == nil && u.RawQuery != "" {
		rq := ru.Query()
		for k, vs := range u.Query() {
			if rq.Get(k) != "REDACTED" {
				continue
			}
			for _, v := range vs {
				msg = strings.ReplaceAll(msg, k+"="+v, k+"=REDACTED")
				if len(v) >= 4 { // shorter values would mangle unrelated words
					msg = strings.ReplaceAll(msg, v, "REDACTED")
				}
			}
		}
	}
	return msg
}
