package mqtt

import (
	"crypto/tls"
	"log/slog"
	"net/url"
	"time"
)

// options are what both clients need.
type options struct {
	url       *url.URL
	qos       byte
	clientID  string
	username  string
	password  string
	tls       *tls.Config
	available string // the availability topic
	inflight  int
	log       *slog.Logger
}

const (
	keepAlive      = 30 * time.Second
	connectTimeout = 10 * time.Second
	retryDelay     = time.Second
	closeTimeout   = 2 * time.Second
)

// brokerURL returns u with the scheme the clients know for TLS or not.
func (o *options) brokerURL() *url.URL {
	u := *o.url
	switch u.Scheme {
	case "mqtts", "ssl":
		u.Scheme = "tls"
	default:
		u.Scheme = "mqtt"
	}
	return &u
}
