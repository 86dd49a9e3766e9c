package brokered

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLS are client TLS settings. Paths are relative to the configuration file's directory.
type TLS struct {
	// CA is a PEM file of the certificate authorities to trust (default: the system's).
	CA string `yaml:"ca"`
	// Cert and Key are a PEM client certificate and its key, for mutual TLS.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// ServerName overrides the name checked in the server's certificate.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// ErrTLS is wrapped by Config's errors.
var ErrTLS = errors.New("tls")

// Config builds the tls.Config t describes; nil when t is nil.
func (t *TLS) Config(dir string) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(Resolve(dir, t.CA))
		if err != nil {
			return nil, fmt.Errorf("%w: ca: %v", ErrTLS, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca %s: no PEM certificate", ErrTLS, t.CA)
		}
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, fmt.Errorf("%w: cert and key go together", ErrTLS)
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(Resolve(dir, t.Cert), Resolve(dir, t.Key))
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %v", ErrTLS, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
