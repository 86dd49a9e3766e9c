package sink

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/vinfer/vinfer/config"
)

// Kind is one kind of output, chosen by a sink declaration's type (output.sinks[].type). A sink
// package declares its Kind and the application registers it once (app's module table).
type Kind struct {
	// Type is the word of output.sinks[].type.
	Type string
	// Open decodes the declaration's settings (config.Sink.Decode, strictly) and returns the
	// sink. A sink that also implements io.Closer is closed after the last result.
	Open func(decl config.Sink, env Env) (Sink, error)
}

// Env is what sinks may use from the process.
type Env struct {
	// Dir resolves relative paths (the configuration file's directory).
	Dir string
	// DataDir is where sinks keep state (outboxes), relative to Dir; empty: "vinfer-data".
	DataDir string
	// Stdout is the process's standard output.
	Stdout io.Writer
	Log    *slog.Logger
}

// ErrUnknownType is wrapped by Open's error for a type no kind registered.
var ErrUnknownType = errors.New("unknown sink type")

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// Register makes k available to Open; it panics when the type is registered twice.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Type]; dup {
		panic("sink: type " + k.Type + " registered twice")
	}
	kinds[k.Type] = k
}

// Types lists the registered sink types, sorted.
func Types() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for t := range kinds {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Open opens the sink a declaration describes.
func Open(decl config.Sink, env Env) (Sink, error) {
	kindsMu.RLock()
	k, ok := kinds[decl.Type]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("sink %q: %w (have %v)", decl.Type, ErrUnknownType, Types())
	}
	if env.Log == nil {
		env.Log = slog.Default()
	}
	s, err := k.Open(decl, env)
	return s, decl.Locate(err)
}
