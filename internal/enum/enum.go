// Package enum gives small integer enumerations their configuration words: parsing with an
// error that lists the accepted words, and printing. Types implement encoding.TextMarshaler and
// encoding.TextUnmarshaler with it, so YAML and JSON carry the words and a bad word fails at
// decoding time ("parse, don't validate").
package enum

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown is wrapped by Parse's error for a word that is not one of the names.
var ErrUnknown = errors.New("unknown value")

// Parse returns the index of word in names (case-insensitive, surrounding spaces ignored).
// what names the setting in the error: `decoder "gpu": unknown value (use cpu or nvdec)`.
func Parse[T ~uint8](what string, names []string, word []byte) (T, error) {
	w := strings.TrimSpace(string(word))
	for i, n := range names {
		if strings.EqualFold(w, n) {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("%s %q: %w (use %s)", what, w, ErrUnknown, List(names))
}

// Name returns names[v], or "invalid(N)" for a value outside the enumeration.
func Name[T ~uint8](v T, names []string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("invalid(%d)", v)
}

// Text is Name for MarshalText: an error for a value outside the enumeration.
func Text[T ~uint8](what string, v T, names []string) ([]byte, error) {
	if int(v) >= len(names) {
		return nil, fmt.Errorf("%s %d: %w", what, v, ErrUnknown)
	}
	return []byte(names[v]), nil
}

// List writes the accepted words for an error message: "a, b or c". Empty words (a default
// that is written by leaving the field out) are skipped.
func List(names []string) string {
	var w []string
	for _, n := range names {
		if n != "" {
			w = append(w, n)
		}
	}
	switch len(w) {
	case 0:
		return ""
	case 1:
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}
