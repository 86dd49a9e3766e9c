package app

import "github.com/vinfer/vinfer/internal/defs"

var _ defs.Waker = (*App)(nil)

// WakeStream wakes a gated stream (pipeline.Wake).
func (a *App) WakeStream(id string) error { return a.Pipeline.Wake(id) }
