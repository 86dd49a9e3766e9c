// Package webhook is the webhook sink: events and detections POSTed as JSON to an HTTP(S)
// endpoint, behind the sink's durable outbox (package brokered).
//
// By default each record is one POST whose body is the event's JSON (or the detections'),
// with up to Concurrency requests in flight; with batch: true each delivery attempt is one
// POST of a JSON array. Headers: Content-Type: application/json, X-Vinfer-Event-Id (the
// event id, for deduplication; one-per-record mode), X-Vinfer-Event-Type, X-Vinfer-Stream,
// and with a secret
//
//	X-Vinfer-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>
//
// A 2xx answer delivers; 400, 413 and 422 mark the record undeliverable (skipped, counted);
// anything else, a timeout or a network error is retried with the worker's backoff. Only 307
// and 308 redirects are followed, to the same scheme and host.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Settings are the webhook sink's settings.
type Settings struct {
	brokered.Settings `yaml:",inline"`
	// URL is the endpoint, http:// or https://.
	URL string `yaml:"url"`
	// Secret signs every request (X-Vinfer-Signature); no signature when empty.
	Secret string `yaml:"secret"`
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string `yaml:"headers"`
	// Batch sends each delivery attempt's records as one JSON array.
	Batch bool `yaml:"batch"`
	// Concurrency bounds the requests in flight (default 4).
	Concurrency int `yaml:"concurrency"`
	// TLS configures https (CA, client certificate).
	TLS *brokered.TLS `yaml:"tls"`
}

// Errors.
var (
	ErrURL      = errors.New("webhook: url must be http:// or https:// with a host")
	ErrRedirect = errors.New("webhook: redirect refused (only 307/308 to the same scheme and host)")
	ErrStatus   = errors.New("webhook: endpoint answered")
)

// SignatureHeader is the header carrying the request's signature.
const SignatureHeader = "X-Vinfer-Signature"

// Kind is the webhook sink: {type: webhook, url: https://…, secret, batch, concurrency, …}.
var Kind = sink.Kind{Type: "webhook", Open: Open}

// Open decodes decl and opens the sink; a URL that is not http(s) is an error (ErrURL).
func Open(decl config.Sink, env sink.Env) (sink.Sink, error) {
	var s Settings
	if err := decl.Decode(&s); err != nil {
		return nil, err
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ErrURL
	}
	if s.Concurrency < 0 {
		return nil, errors.New("webhook: concurrency must not be negative")
	}
	if s.Concurrency == 0 {
		s.Concurrency = 4
	}
	if s.MaxBatch == 0 && !s.Batch {
		s.MaxBatch = 4 * s.Concurrency // a few rounds of requests per delivery attempt
	}
	tlsConf, err := s.TLS.Config(env.Dir)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return brokered.Open("webhook", &s.Settings, env, func() (deliver.Publisher, error) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsConf
		tr.MaxConnsPerHost = s.Concurrency
		return &Publisher{URL: s.URL, Secret: []byte(s.Secret), Headers: s.Headers, Batch: s.Batch,
			Concurrency: s.Concurrency, Client: NewClient(tr, u)}, nil
	})
}

// NewClient returns an HTTP client using tr that follows only 307 and 308 redirects to the
// scheme and host of u (so the body is sent again, and never to another host).
func NewClient(tr http.RoundTripper, u *url.URL) *http.Client {
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != u.Scheme || req.URL.Host != u.Host || len(via) > 5 ||
			req.Response == nil || (req.Response.StatusCode != 307 && req.Response.StatusCode != 308) {
			return ErrRedirect
		}
		return nil
	}}
}

// Sign returns the X-Vinfer-Signature value of body at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Publisher POSTs records to URL.
type Publisher struct {
	URL         string
	Secret      []byte
	Headers     map[string]string
	Batch       bool
	Concurrency int
	Client      *http.Client
}

// Publish implements deliver.Publisher.
func (p *Publisher) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	if p.Batch {
		return p.publishBatch(ctx, recs)
	}
	errs := make([]error, len(recs))
	sem := make(chan struct{}, max(p.Concurrency, 1))
	var wg sync.WaitGroup
	for i, r := range recs {
		d, err := brokered.Decode(r.Data)
		if err != nil {
			errs[i] = fmt.Errorf("%w: %v", deliver.ErrUndeliverable, err)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = p.post(ctx, d.Body, func(h http.Header) {
				h.Set("X-Vinfer-Event-Id", d.ID.String())
				h.Set("X-Vinfer-Event-Type", string(d.Type))
				h.Set("X-Vinfer-Stream", string(d.Stream))
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

func (p *Publisher) publishBatch(ctx context.Context, recs []outbox.Record) (int, error) {
	body := []byte{'['}
	n := 0
	var bad error
	for _, r := range recs {
		d, err := brokered.Decode(r.Data)
		if err != nil {
			bad = fmt.Errorf("%w: %v", deliver.ErrUndeliverable, err)
			break
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, d.Body...)
		n++
	}
	body = append(body, ']')
	if n > 0 {
		if err := p.post(ctx, body, nil); err != nil {
			return 0, err
		}
	}
	if bad != nil {
		return n, bad
	}
	return len(recs), nil
}

// post sends one request; undeliverable statuses wrap deliver.ErrUndeliverable.
func (p *Publisher) post(ctx context.Context, body []byte, headers func(http.Header)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vinfer")
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	if headers != nil {
		headers(req.Header)
	}
	if len(p.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(p.Secret, time.Now(), body))
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold credentials
		}
		return fmt.Errorf("webhook: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == 400 || c == 413 || c == 422:
		return fmt.Errorf("%w %s: %w", ErrStatus, resp.Status, deliver.ErrUndeliverable)
	default:
		return fmt.Errorf("%w %s", ErrStatus, resp.Status)
	}
}

// Close releases idle connections.
func (p *Publisher) Close() error {
	p.Client.CloseIdleConnections()
	return nil
}
