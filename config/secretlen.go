package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// ErrShortSecret is wrapped when an API token or the RTSP password is shorter than
// MinTokenLen characters; the message names the field (and, from a file, its line).
var ErrShortSecret = errors.New("secret too short")

// ErrSecretChars is wrapped when an API token has characters a bearer header (RFC 6750
// §2.1) does not carry as written: other than printable ASCII, or a space at either end.
var ErrSecretChars = errors.New("secret has characters a bearer header does not carry")

// CheckSecret returns an error wrapping ErrShortSecret when value is set but shorter than
// MinTokenLen characters, or, for an API token (where not ending in "password"), wrapping
// ErrSecretChars when it has a character other than printable ASCII (U+0020–U+007E) or a
// space at either end; where names it (a field, an environment variable). Empty is no
// secret, allowed here (the listeners decide whether they need one).
func CheckSecret(where, value string) error {
	if n := utf8.RuneCountInString(value); value != "" && n < MinTokenLen {
		return fmt.Errorf("%s: %w: %d characters, at least %d (e.g. `openssl rand -hex 24`)", where, ErrShortSecret, n, MinTokenLen)
	}
	if !strings.HasSuffix(where, "password") {
		return tokenChars(where, value)
	}
	return nil
}

// tokenChars checks an API token's characters (CheckSecret): a header's value loses the
// spaces and line ends at its ends, and browsers send non-ASCII as ISO-8859-1 or not at all.
func tokenChars(where, value string) error {
	if strings.TrimSpace(value) != value {
		return fmt.Errorf("%s: %w: a space or line end at its start or end (a file's last newline?)", where, ErrSecretChars)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%s: %w: a control or non-ASCII character at byte %d (use printable ASCII, e.g. `openssl rand -hex 24`)", where, ErrSecretChars, i)
		}
	}
	return nil
}

// secrets are the output's secret fields by YAML path: output.token, output.rtsp.password and
// each output.tokens[i].token.
func (o *Output) secrets() map[string]string {
	m := map[string]string{"output.token": o.Token}
	if o.RTSP != nil {
		m["output.rtsp.password"] = o.RTSP.Password
	}
	for i, t := range o.Tokens {
		m[fmt.Sprintf("output.tokens[%d].token", i)] = t.Token
	}
	return m
}

// checkSecrets checks the lengths (and the tokens' characters) of the output's secrets (Validate; without lines).
func (o *Output) checkSecrets() error {
	for _, f := range []string{"output.token", "output.rtsp.password"} {
		if err := CheckSecret(f, o.secrets()[f]); err != nil {
			return err
		}
	}
	return nil // output.tokens: ValidateTokens
}

// checkSecretLines is checkSecrets over every secret of the file b decoded into o, naming
// the file's line of each refused.
func (o *Output) checkSecretLines(b []byte) error {
	var errs []error
	secrets := o.secrets()
	for _, field := range slices.Sorted(maps.Keys(secrets)) {
		v := secrets[field]
		err := CheckSecret(field, v)
		if err == nil {
			continue
		}
		if p, perr := yaml.PathString("$." + field); perr == nil {
			if n, nerr := p.ReadNode(bytes.NewReader(b)); nerr == nil && n != nil {
				at := n.GetToken().Position
				if errors.Is(err, ErrSecretChars) {
					err = tokenChars(fmt.Sprintf("%s (line %d)", field, at.Line), v)
				} else {
					err = fmt.Errorf("%s (line %d): %w: %d characters, at least %d (e.g. `openssl rand -hex 24`)",
						field, at.Line, ErrShortSecret, utf8.RuneCountInString(v), MinTokenLen)
				}
			}
		}
		if strings.HasPrefix(field, "output.tokens[") {
			err = fmt.Errorf("%w: %w", ErrToken, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
