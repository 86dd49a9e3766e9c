package redact

import (
	"slices"
	"strings"
)

// freeSecretKeys are the parameter names whose value Quoted redacts in free text (key=value
// outside a URL): those that name nothing but a credential (not "code", "key" or "session",
// ordinary words in messages).
var freeSecretKeys = []string{"password", "passwd", "pwd", "pass", "passphrase", "token",
	"access_token", "refresh_token", "id_token", "secret", "client_secret", "apikey", "api_key",
	"x-api-key", "private_key", "signature", "x-amz-signature", "x-amz-credential",
	"x-amz-security-token", "x-goog-signature", "x-goog-credential"}

// Quoted redacts credentials a message quotes that belong to no URL vinfer knows: a peer's
// text (an RTSP reason phrase, a redirect, a broker's error) may carry another URL with user
// information or secret parameters, or a bare password=value. Every URL in msg (scheme://…
// up to a space or quote) with user information or parameters goes through URL (a URL ends at a space, a quote, '<', '>' or '`', without the punctuation closing it); the value of
// every key=value of freeSecretKeys outside one becomes Mark.
func Quoted(msg string) string {
	if strings.Contains(msg, "://") {
		msg = quotedURLs(msg)
	}
	if strings.Contains(msg, "=") {
		msg = quotedPairs(msg)
	}
	return msg
}

// endOfToken reports the bytes that end a URL or a value quoted in a message.
func endOfToken(c byte) bool {
	return c <= ' ' || strings.IndexByte("\"'<>`", c) >= 0
}

func quotedURLs(msg string) string {
	return rewrite(msg, "://", func(msg string, i int) (int, string, int) {
		start := i
		for start > 0 && isSchemeByte(msg[start-1]) {
			start--
		}
		end := i + 3
		for end < len(msg) && !endOfToken(msg[end]) {
			end++
		}
		// punctuation ending a sentence or closing a parenthesis stays out of the URL
		for end > i+3 && strings.IndexByte(").,;:]}", msg[end-1]) >= 0 {
			end--
		}
		tok := msg[start:end]
		if start < i && strings.ContainsAny(tok[i-start+3:], "@?;") {
			tok = URL(tok)
		}
		return start, tok, end
	})
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// quotedPairs replaces the value of key=value (key in freeSecretKeys, any case, not preceded
// by a letter, digit, '_' or '-') up to a space, quote, '&', ';', ',' or ')'.
func quotedPairs(msg string) string {
	return rewrite(msg, "=", func(msg string, i int) (int, string, int) {
		k := i
		for k > 0 && (isWordByte(msg[k-1]) || msg[k-1] == '-') {
			k--
		}
		end := i + 1
		for end < len(msg) && !endOfToken(msg[end]) && strings.IndexByte("&;,)", msg[end]) < 0 {
			end++
		}
		key, val := strings.ToLower(msg[k:i]), msg[i+1:end]
		if val != "" && !strings.HasPrefix(val, Mark) && inFreeKeys(key) {
			val = Mark
		}
		return i + 1, val, end
	})
}

func inFreeKeys(k string) bool { return slices.Contains(freeSecretKeys, k) }
