// Package nats is the nats sink: events and detections published to NATS, or to JetStream
// with deduplication by event id, through nats.go, behind the sink's durable outbox
// (package brokered).
//
// Subjects are <prefix>.<stream>.<type>: vinfer.cam1.zone.enter, vinfer.cam1.line.cross,
// vinfer.cam1.detections (dots in a stream id become '_'). Every message carries the headers
// Nats-Msg-Id (the event id; JetStream drops a repeat within the stream's duplicate window)
// and Vinfer-Stream. Core NATS counts a message delivered once the server has it (a flush
// round trip): subscribers that are not connected miss it; JetStream counts it delivered on
// the stream's acknowledgement.
package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Settings are the nats sink's settings.
type Settings struct {
	brokered.Settings `yaml:",inline"`
	// URL is the server, nats://host:4222 (tls://… for TLS); several separated by commas.
	URL string `yaml:"url"`
	// Prefix is the subjects' first token(s) (default vinfer).
	Prefix string `yaml:"prefix"`
	// JetStream publishes to JetStream and waits for its acknowledgements.
	JetStream bool `yaml:"jetstream"`
	// Stream, with JetStream, is created when missing with subjects <prefix>.> (file storage).
	Stream string `yaml:"stream"`
	// Creds is a credentials file (JWT and NKey seed).
	Creds string `yaml:"creds"`
	// User and Password, or Token, authenticate without a credentials file.
	User     string `yaml:"user"`
	Password string `yaml:"password"`
	Token    string `yaml:"token"`
	// TLS configures the connection's TLS (CA, client certificate).
	TLS *brokered.TLS `yaml:"tls"`
}

// Errors.
var (
	ErrURL          = errors.New("nats: url is required")
	ErrPrefix       = errors.New("nats: prefix must be subject tokens without spaces or wildcards")
	ErrNotConnected = errors.New("nats: not connected")
)

// Kind is the nats sink: {type: nats, url: nats://…, prefix, jetstream, stream, creds, tls, …}.
var Kind = sink.Kind{Type: "nats", Open: Open}

// Open decodes decl and opens the sink. It does not wait for the server: an unreachable server
// is retried in the background (the sink's stats show it down).
func Open(decl config.Sink, env sink.Env) (sink.Sink, error) {
	var s Settings
	if err := decl.Decode(&s); err != nil {
		return nil, err
	}
	if s.URL == "" {
		return nil, ErrURL
	}
	if s.Prefix == "" {
		s.Prefix = "vinfer"
	}
	if strings.ContainsAny(s.Prefix, " \t\r\n*>") || strings.HasPrefix(s.Prefix, ".") || strings.HasSuffix(s.Prefix, ".") {
		return nil, fmt.Errorf("%w: %q", ErrPrefix, s.Prefix)
	}
	tlsConf, err := s.TLS.Config(env.Dir)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	return brokered.Open("nats", &s.Settings, env, func() (deliver.Publisher, error) {
		opts := []nats.Option{
			nats.Name("vinfer " + s.Name),
			nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
			nats.ReconnectWait(time.Second), nats.ReconnectJitter(200*time.Millisecond, time.Second),
			nats.ReconnectBufSize(-1), // fail publishes while disconnected: the outbox keeps them
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				env.Log.Warn("nats: error", "sink", s.Name, "error", err)
			}),
		}
		if tlsConf != nil {
			opts = append(opts, nats.Secure(tlsConf))
		}
		if s.Creds != "" {
			opts = append(opts, nats.UserCredentials(brokered.Resolve(env.Dir, s.Creds)))
		}
		if s.User != "" {
			opts = append(opts, nats.UserInfo(s.User, s.Password))
		}
		if s.Token != "" {
			opts = append(opts, nats.Token(s.Token))
		}
		nc, err := nats.Connect(s.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		p := &publisher{nc: nc, prefix: s.Prefix, stream: s.Stream}
		if s.JetStream {
			if p.js, err = jetstream.New(nc); err != nil {
				nc.Close()
				return nil, fmt.Errorf("nats: %w", err)
			}
		}
		return p, nil
	})
}

// publisher publishes records to NATS or JetStream.
type publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	prefix  string
	stream  string
	ensured bool
	futs    []jetstream.PubAckFuture
}

// Subject returns the subject of a record of stream and type under prefix.
func Subject(prefix string, stream, typ []byte) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(stream) + len(typ) + 2)
	b.WriteString(prefix)
	b.WriteByte('.')
	for _, c := range stream {
		if c == '.' || c == ' ' || c == '*' || c == '>' {
			c = '_'
		}
		b.WriteByte(c)
	}
	b.WriteByte('.')
	b.Write(typ)
	return b.String()
}

func (p *publisher) message(r outbox.Record) (*nats.Msg, error) {
	d, err := brokered.Decode(r.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", deliver.ErrUndeliverable, err)
	}
	m := nats.NewMsg(Subject(p.prefix, d.Stream, d.Type))
	m.Data = d.Body
	m.Header.Set(jetstream.MsgIDHeader, d.ID.String())
	m.Header.Set("Vinfer-Stream", string(d.Stream))
	return m, nil
}

func (p *publisher) notConnected() error {
	if err := p.nc.LastError(); err != nil {
		return fmt.Errorf("%w (%s): %v", ErrNotConnected, p.nc.Status(), err)
	}
	return fmt.Errorf("%w (%s)", ErrNotConnected, p.nc.Status())
}

// Publish implements deliver.Publisher.
func (p *publisher) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	if !p.nc.IsConnected() {
		return 0, p.notConnected()
	}
	if p.js != nil {
		return p.publishJS(ctx, recs)
	}
	for i, r := range recs {
		m, err := p.message(r)
		if err != nil {
			return i, err
		}
		if err := p.nc.PublishMsg(m); err != nil {
			return 0, fmt.Errorf("nats: %w", err)
		}
	}
	if err := p.nc.FlushWithContext(ctx); err != nil {
		return 0, fmt.Errorf("nats: flush: %w", err)
	}
	return len(recs), nil
}

func (p *publisher) publishJS(ctx context.Context, recs []outbox.Record) (int, error) {
	if p.stream != "" && !p.ensured {
		if _, err := p.js.Stream(ctx, p.stream); errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = p.js.CreateStream(ctx, jetstream.StreamConfig{Name: p.stream, Subjects: []string{p.prefix + ".>"}})
			if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return 0, fmt.Errorf("nats: creating stream %s: %w", p.stream, err)
			}
		} else if err != nil {
			return 0, fmt.Errorf("nats: stream %s: %w", p.stream, err)
		}
		p.ensured = true
	}
	p.futs = p.futs[:0]
	var pubErr error
	bad := -1
	for i, r := range recs {
		m, err := p.message(r)
		if err != nil {
			bad, pubErr = i, err
			break
		}
		f, err := p.js.PublishMsgAsync(m)
		if err != nil {
			pubErr = fmt.Errorf("nats: jetstream: %w", err)
			break
		}
		p.futs = append(p.futs, f)
	}
	for i, f := range p.futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return i, fmt.Errorf("nats: jetstream: %w", err)
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
	if bad >= 0 || pubErr != nil {
		return len(p.futs), pubErr
	}
	return len(recs), nil
}

// Close closes the connection.
func (p *publisher) Close() error {
	p.nc.Close()
	return nil
}
