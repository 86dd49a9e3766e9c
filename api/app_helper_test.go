package api_test

import (
	"context"
	"testing"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
)

// mustApp builds a running app or fails the test.
func mustApp(tb testing.TB, cfg *config.Config, o app.Options) *app.App {
	tb.Helper()
	a, err := app.New(context.Background(), cfg, o)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}
