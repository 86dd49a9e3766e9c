package cluster

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/vinfer/vinfer/config"
)

// ErrAuth is NATS refusing this node's credentials or certificate, or credentials that could
// not be read (cluster.auth, cluster.tls).
var ErrAuth = errors.New("cluster: NATS refused this node (check cluster.auth and cluster.tls)")

// authOptions are the nats.go options of the cluster section's credentials and TLS. Files are
// read here, so a missing or unreadable one is an ErrAuth naming the field.
func authOptions(c config.Cluster) ([]nats.Option, error) {
	var opts []nats.Option
	a := c.Auth
	readable := func(field, path string) error {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrAuth, field, err)
		}
		return f.Close()
	}
	switch a.Kind() {
	case "user":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case "token":
		opts = append(opts, nats.Token(a.Token))
	case "nkey":
		if err := readable("cluster.auth.nkey_seed_file", a.NKeySeedFile); err != nil {
			return nil, err
		}
		o, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster.auth.nkey_seed_file: %v", ErrAuth, err)
		}
		opts = append(opts, o)
	case "credentials":
		if err := readable("cluster.auth.credentials_file", a.CredentialsFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(a.CredentialsFile))
	}
	t := c.TLS
	if t.CA != "" {
		if err := readable("cluster.tls.ca", t.CA); err != nil {
			return nil, err
		}
		opts = append(opts, nats.RootCAs(t.CA))
	}
	if t.Cert != "" {
		for field, p := range map[string]string{"cluster.tls.cert": t.Cert, "cluster.tls.key": t.Key} {
			if err := readable(field, p); err != nil {
				return nil, err
			}
		}
		opts = append(opts, nats.ClientCert(t.Cert, t.Key))
	}
	if t.Enabled() {
		opts = append(opts, nats.Secure())
	}
	return opts, nil
}

// connectError classifies nats.Connect's error: refused credentials or a failed TLS handshake
// are ErrAuth, the rest ErrUnavailable.
func connectError(url string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrNkeysNotSupported), strings.Contains(strings.ToLower(msg), "authorization violation"):
		return fmt.Errorf("%w: %s: %v", ErrAuth, url, err)
	case strings.Contains(msg, "tls:"), strings.Contains(msg, "tls error"), strings.Contains(msg, "x509:"), errors.Is(err, nats.ErrSecureConnRequired),
		errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%w: %s: TLS: %v", ErrAuth, url, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, url, err)
}
