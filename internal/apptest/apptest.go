// Package apptest starts whole apps for end-to-end tests. It is imported by tests only.
package apptest

import (
	"context"
	"testing"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
)

// MustApp builds a running app or fails the test.
func MustApp(tb testing.TB, cfg *config.Config, o app.Options) *app.App {
	tb.Helper()
	a, err := app.New(context.Background(), cfg, o)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}
