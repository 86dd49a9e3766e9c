package config

import (
	"errors"
	"strings"
	"testing"
)

// TestTokens: output.tokens parses with label, scope, streams and rate; every mistake is an
// error naming its field (issue 25, item 7), and output.token still stands beside them.
func TestTokens(t *testing.T) {
	const head = "output:\n  token: aaaaaaaaaaaaaaaaaaaa\n  tokens:\n"
	c, err := Parse([]byte(head + `
    - {label: wall, token: bbbbbbbbbbbbbbbbbbbb, scope: viewer, streams: [cam1, cam2]}
    - {label: ops, token: cccccccccccccccccccc, scope: operator, rate_per_minute: 30}
`))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Output; o.Token == "" || len(o.Tokens) != 2 || o.Tokens[0].Scope != ScopeViewer ||
		len(o.Tokens[0].Streams) != 2 || o.Tokens[1].RatePerMinute != 30 {
		t.Fatalf("output %+v", o)
	}
	for _, tc := range []struct{ name, tokens, want string }{
		{"no label", "- {token: bbbbbbbbbbbbbbbbbbbb, scope: viewer}", "output.tokens[0].label is required"},
		{"bad label", "- {label: 'a b', token: bbbbbbbbbbbbbbbbbbbb, scope: viewer}", "output.tokens[0].label"},
		{"short", "- {label: a, token: short, scope: viewer}", "output.tokens[0].token"},
		{"scope", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb, scope: root}", `output.tokens[0].scope "root"`},
		{"no scope", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb}", "output.tokens[0].scope"},
		{"rate", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb, scope: admin, rate_per_minute: -1}", "output.tokens[0].rate_per_minute"},
		{"stream", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb, scope: admin, streams: [ok, '../x']}", "output.tokens[0].streams[1]"},
		{"dup label", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb, scope: admin}\n    - {label: a, token: cccccccccccccccccccc, scope: admin}", "output.tokens[1].label \"a\" is also output.tokens[0]'s"},
		{"dup secret", "- {label: a, token: bbbbbbbbbbbbbbbbbbbb, scope: admin}\n    - {label: b, token: bbbbbbbbbbbbbbbbbbbb, scope: admin}", "output.tokens[1].token of \"b\" is the same secret as output.tokens[0]"},
		{"single's secret", "- {label: a, token: aaaaaaaaaaaaaaaaaaaa, scope: viewer}", "same secret as output.token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head + "    " + tc.tokens + "\n"))
			if !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrToken naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "bbbbbbbb") || strings.Contains(err.Error(), "aaaaaaaa") {
				t.Fatalf("error quotes a secret: %v", err)
			}
		})
	}
}
