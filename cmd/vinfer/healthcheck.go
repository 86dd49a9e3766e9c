package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// healthcheckURLEnv overrides the URL `vinfer healthcheck` asks (the container image's
// HEALTHCHECK runs it: the runtime image has no curl).
const healthcheckURLEnv = "VINFER_HEALTHCHECK_URL"

// healthcheckCmd asks a running vinfer's /healthz (default http://127.0.0.1:8080/healthz) and
// fails unless it answers 200 within the timeout. A loopback HTTPS server's certificate is not
// verified (the check is about liveness, not identity).
func healthcheckCmd(args []string) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	def := os.Getenv(healthcheckURLEnv)
	if def == "" {
		def = "http://127.0.0.1:8080/healthz"
	}
	url := fs.String("url", def, "the URL to ask ($"+healthcheckURLEnv+")")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // liveness of a local server
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return errors.New("healthcheck: " + resp.Status + ": " + string(body))
	}
	return nil
}
