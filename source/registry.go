package source

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/redact"
)

// Kind is one kind of source, chosen by the scheme of a stream's source URL. A source package
// declares its Kind and the application registers it once (app's module table).
type Kind struct {
	// Schemes are the URL schemes the kind takes, in lower case. The kind with "file" also takes
	// sources written without a scheme (paths).
	Schemes []string
	// Open parses s.Source and the stream settings the kind uses (its URL parameters, loop,
	// transport) and returns the source, validated and started; a parameter that does not parse
	// is an error naming it. It holds the files it names to p.Roots and its waits to
	// p.Timeout().
	Open func(s *config.Stream, p Policy) (Source, error)
}

// ErrUnknownScheme is wrapped by Open's error for a scheme no kind registered.
var ErrUnknownScheme = errors.New("unknown source scheme")

// ErrBadURL is wrapped by Open's error for a source URL that does not parse. The error never
// quotes the URL: what fails to parse is usually a password holding '#', '/' or '%'.
var ErrBadURL = errors.New("source URL does not parse: percent-encode '#', '/', '?', '%' and '@' in user names, passwords and parameters (%23, %2F, %3F, %25, %40)")

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// Register makes k's schemes available to Open. It panics when a scheme is registered twice
// (two packages claiming one scheme is a programming error).
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	for _, s := range k.Schemes {
		if _, dup := kinds[s]; dup {
			panic("source: scheme " + s + " registered twice")
		}
		kinds[s] = k
	}
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for s := range kinds {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Scheme returns the scheme of a source URL in lower case: "file" for a path without one.
func Scheme(src string) string {
	scheme, _, ok := strings.Cut(src, "://")
	if !ok {
		return "file"
	}
	return strings.ToLower(scheme)
}

// Open opens the stream's source with the kind registered for its scheme, under policy p.
// Errors name the stream, wrap the kind's sentinels and never include credentials.
func Open(s *config.Stream, p Policy) (Source, error) {
	scheme := Scheme(s.Source)
	if scheme != "file" {
		if u, err := url.Parse(s.Source); err != nil || u.Opaque != "" {
			return nil, fmt.Errorf("stream %s: %s: %w", s.ID, redact.Source(s.Source), ErrBadURL)
		}
	}
	kindsMu.RLock()
	k, ok := kinds[scheme]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("stream %s: %q: %w (use a file path or one of %s)", s.ID, scheme, ErrUnknownScheme,
			strings.Join(Schemes(), "://, ")+"://")
	}
	src, err := k.Open(s, p)
	if err != nil {
		return nil, &redactedError{msg: fmt.Sprintf("stream %s: %s", s.ID, redact.Message(err.Error(), s.Source)), err: err}
	}
	return src, nil
}

// redactedError shows a redacted message and keeps the original error for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
