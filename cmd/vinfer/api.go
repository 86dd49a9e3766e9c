package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/vinfer/vinfer/app"
)

func startAPI(ctx context.Context, a *app.App, addr, token string, log *slog.Logger) (io.Closer, error) {
	return nil, errors.New("the HTTP API is not built yet")
}
