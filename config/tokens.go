package config

import (
	"errors"
	"fmt"
	"slices"
)

// Scopes a token may hold, each including those before it: viewer reads (lists, snapshots,
// events, metrics); operator also adds and removes streams and edits scenes; admin also reloads
// models and reads the cluster, GB28181 and debug routes. output.token is an admin token.
const (
	ScopeViewer   = "viewer"
	ScopeOperator = "operator"
	ScopeAdmin    = "admin"
)

// Scopes lists the scopes, weakest first.
var Scopes = []string{ScopeViewer, ScopeOperator, ScopeAdmin}

// MinTokenLen is the shortest token secret accepted (bytes): a bearer token is the whole of
// the credential.
const MinTokenLen = 16

// ErrToken is wrapped by every error of output.tokens; the message names the field.
var ErrToken = errors.New("output.tokens")

// Token is one API credential with a label (the audit log names it), a scope, optionally the
// streams it is limited to, and a rate limit on its state-changing calls.
type Token struct {
	// Label names the token in the audit log and in errors (never the secret); unique.
	Label string `yaml:"label" json:"label"`
	// Token is the bearer secret, at least MinTokenLen bytes; unique.
	Token string `yaml:"token" json:"-"`
	// Scope is viewer, operator or admin.
	Scope string `yaml:"scope" json:"scope"`
	// Streams, when not empty, are the only stream ids the token may see or change.
	Streams []string `yaml:"streams,omitempty" json:"streams,omitempty"`
	// RatePerMinute bounds the token's state-changing calls (POST, PUT, DELETE) per minute,
	// in bursts of as many; 0: no limit.
	RatePerMinute int `yaml:"rate_per_minute,omitempty" json:"rate_per_minute,omitempty"`
}

// ValidateTokens checks output.tokens beside output.token (the single admin token): labels
// and secrets present and unique, scopes known, stream ids well formed, rates not negative.
// Errors wrap ErrToken and name the field, e.g. "output.tokens[2].scope".
func ValidateTokens(tokens []Token, single string) error {
	labels, secrets := map[string]int{}, map[string]int{}
	if single != "" {
		secrets[single] = -1
	}
	for i, t := range tokens {
		field := func(name string) string { return fmt.Sprintf("output.tokens[%d].%s", i, name) }
		switch {
		case t.Label == "":
			return fmt.Errorf("%w: %s is required (it names the token in the audit log)", ErrToken, field("label"))
		case !idPattern.MatchString(t.Label):
			return fmt.Errorf("%w: %s %q: use letters, digits, '.', '_' and '-', at most 64", ErrToken, field("label"), t.Label)
		case len(t.Token) < MinTokenLen:
			return fmt.Errorf("%w: %s of %q: at least %d bytes (e.g. `openssl rand -hex 24`)", ErrToken, field("token"), t.Label, MinTokenLen)
		case !slices.Contains(Scopes, t.Scope):
			return fmt.Errorf("%w: %s %q: one of %v", ErrToken, field("scope"), t.Scope, Scopes)
		case t.RatePerMinute < 0:
			return fmt.Errorf("%w: %s %d: 0 (no limit) or more", ErrToken, field("rate_per_minute"), t.RatePerMinute)
		}
		if j, dup := labels[t.Label]; dup {
			return fmt.Errorf("%w: %s %q is also output.tokens[%d]'s", ErrToken, field("label"), t.Label, j)
		}
		if j, dup := secrets[t.Token]; dup {
			other := "output.token"
			if j >= 0 {
				other = fmt.Sprintf("output.tokens[%d]", j)
			}
			return fmt.Errorf("%w: %s of %q is the same secret as %s", ErrToken, field("token"), t.Label, other)
		}
		labels[t.Label], secrets[t.Token] = i, i
		for k, id := range t.Streams {
			if !idPattern.MatchString(id) {
				return fmt.Errorf("%w: %s[%d] %q is not a stream id", ErrToken, field("streams"), k, id)
			}
		}
	}
	return nil
}
