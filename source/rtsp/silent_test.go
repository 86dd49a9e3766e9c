package rtsp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
)

// silentPeer accepts TCP connections and never writes a byte: neither an RTSP response nor a
// TLS ServerHello. It counts the connections it accepted and those the client has closed.
type silentPeer struct {
	ln       net.Listener
	accepted atomic.Int64
	closed   atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startSilentPeer(t *testing.T) *silentPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentPeer{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			p.wg.Add(1)
			go func() { // read (and discard) until the client closes its end
				defer p.wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						p.closed.Add(1)
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// open reports the connections the client still holds.
func (p *silentPeer) open() int64 { return p.accepted.Load() - p.closed.Load() }

// TestSilentPeer connects to a peer that accepts TCP and never answers, over rtsp:// and
// rtsps:// (where the TLS handshake is what waits): every attempt must fail within ReadTimeout
// and be retried, Read must keep blocking only until its context ends, and Close must return
// promptly even while an attempt with a long timeout is in flight, leaving no goroutine and no
// connection behind.
func TestSilentPeer(t *testing.T) {
	for _, scheme := range []string{"rtsp", "rtsps"} {
		t.Run(scheme, func(t *testing.T) {
			peer := startSilentPeer(t)
			url := scheme + "://user:pw@" + peer.ln.Addr().String() + "/cam"
			before := runtime.NumGoroutine()

			// Short timeout: the attempts fail and are retried.
			s := &Source{URL: url, Transport: TransportTCP, ReadTimeout: 300 * time.Millisecond,
				Backoff: []time.Duration{10 * time.Millisecond}, Logger: slog.New(slog.DiscardHandler)}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 20*time.Second, "three failed connection attempts", func() bool {
				return s.Stats().ConnectFailures >= 3
			})
			if st := s.Stats(); st.Connects != 0 || st.Reason == "" {
				t.Fatalf("stats %+v", st)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := s.Read(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Read: %v, want the context's deadline", err)
			}
			closeWithin(t, s, 10*time.Second)

			// Long timeout: Close cancels the attempt in flight. The count is taken before Init
			// (which may connect at once) and once the first client's connections are gone.
			testutil.Eventually(t, 20*time.Second, "the first client's connections closed", func() bool {
				return peer.open() == 0
			})
			n := peer.accepted.Load()
			s = &Source{URL: url, Transport: TransportTCP, ReadTimeout: 10 * time.Minute,
				Logger: slog.New(slog.DiscardHandler)}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 20*time.Second, "a connection attempt in flight", func() bool {
				return peer.accepted.Load() > n
			})
			closeWithin(t, s, 10*time.Second)
			if st := s.Stats(); st.Connects != 0 {
				t.Fatalf("stats %+v", st)
			}

			testutil.Eventually(t, 20*time.Second, "the client's connections closed", func() bool {
				return peer.open() == 0
			})
			testutil.Eventually(t, 20*time.Second, "goroutines back to their count before", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}

// closeWithin fails the test unless s.Close returns within timeout.
func closeWithin(t *testing.T, s *Source, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	start := time.Now()
	testutil.Within(t, timeout, "Close", done)
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
}

// selfSigned returns a server certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vinfer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestPlayTLS plays over rtsps:// through the bounded handshake: access units arrive with a
// trusted certificate, and an untrusted one fails every attempt (retried, never connected).
func TestPlayTLS(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	forma, aus := clipFormat(t, c, true)
	cert, pool := selfSigned(t)
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8, tls: &tls.Config{Certificates: []tls.Certificate{cert}}}
	srv.start()

	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP, TLSConfig: &tls.Config{RootCAs: pool}})
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched >= 10 }, 60*time.Second)
	if st := s.Stats(); st.Connects != 1 {
		t.Fatalf("stats %+v", st)
	}

	u := open(t, &Source{URL: srv.url(), Transport: TransportTCP, Backoff: []time.Duration{10 * time.Millisecond}})
	testutil.Eventually(t, 20*time.Second, "failed attempts with an untrusted certificate", func() bool {
		st := u.Stats()
		return st.ConnectFailures >= 2 && strings.Contains(st.Reason, "certificate")
	})
	if st := u.Stats(); st.Connects != 0 {
		t.Fatalf("stats %+v", st)
	}
}
