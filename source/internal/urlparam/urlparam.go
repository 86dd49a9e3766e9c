// Package urlparam reads a source URL's query parameters strictly: each parameter at most once,
// unknown ones rejected, numbers checked against their range. Sources parse their own settings
// with it.
package urlparam

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ErrParam is wrapped by every error of this package.
var ErrParam = errors.New("bad URL parameter")

// Params are a URL's query parameters; Get and its typed forms mark each as used.
type Params struct {
	v    url.Values
	used map[string]bool
	errs []error
}

// Parse parses raw as a URL and returns it with its query parameters.
func Parse(raw string) (*url.URL, *Params, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrParam, err)
	}
	v, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: query: %v", ErrParam, err)
	}
	return u, &Params{v: v, used: map[string]bool{}}, nil
}

// String returns parameter name ("" when absent).
func (p *Params) String(name string) string {
	p.used[name] = true
	vs := p.v[name]
	if len(vs) > 1 {
		p.errs = append(p.errs, fmt.Errorf("%w: %s given %d times", ErrParam, name, len(vs)))
	}
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// Peek returns parameter name without marking it used ("" when absent).
func (p *Params) Peek(name string) string { return p.v.Get(name) }

// Uint returns parameter name as a decimal number in [0, max] (def when absent).
func (p *Params) Uint(name string, max, def uint64) uint64 {
	s := p.String(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		p.errs = append(p.errs, fmt.Errorf("%w: %s=%q is not a number from 0 to %d", ErrParam, name, s, max))
		return def
	}
	return n
}

// OneOf returns parameter name, which must be one of words (def when absent).
func (p *Params) OneOf(name, def string, words ...string) string {
	s := strings.ToLower(p.String(name))
	if s == "" {
		return def
	}
	if !slices.Contains(words, s) {
		p.errs = append(p.errs, fmt.Errorf("%w: %s=%q: use %s", ErrParam, name, s, strings.Join(words, ", ")))
		return def
	}
	return s
}

// Err returns every error so far, and one for each parameter that was never read.
func (p *Params) Err() error {
	var unknown []string
	for k := range p.v {
		if !p.used[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	errs := p.errs
	if len(unknown) > 0 {
		known := make([]string, 0, len(p.used))
		for k := range p.used {
			known = append(known, k)
		}
		slices.Sort(known)
		errs = append(errs, fmt.Errorf("%w: unknown %s (this source takes %s)", ErrParam,
			strings.Join(unknown, ", "), strings.Join(known, ", ")))
	}
	return errors.Join(errs...)
}
