// Package kafka is the kafka sink: events and detections produced to Kafka through franz-go,
// behind the sink's durable outbox (package brokered).
//
// Each record is one Kafka record: key = the stream id (one partition per stream, so a
// stream's messages stay in order), value = the JSON, headers vinfer-id (the event id, for
// deduplication) and vinfer-type. Events go to Topic, detections to DetectionsTopic. The
// producer is idempotent with acks=all by default (its own retries never duplicate); a
// delivery attempt that times out is sent again by the outbox, and consumers drop those
// duplicates by vinfer-id.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Settings are the kafka sink's settings.
type Settings struct {
	brokered.Settings `yaml:",inline"`
	// Brokers are the seed brokers, host:port.
	Brokers []string `yaml:"brokers"`
	// Topic receives events (default vinfer-events), DetectionsTopic detections (default
	// vinfer-detections).
	Topic           string `yaml:"topic"`
	DetectionsTopic string `yaml:"detections_topic"`
	// Acks is all (the default, idempotent), leader or none.
	Acks string `yaml:"acks"`
	// AutoCreateTopics asks the brokers to create missing topics (default true; the broker's
	// auto.create.topics.enable must allow it).
	AutoCreateTopics *bool `yaml:"auto_create_topics"`
	// SASL authenticates: mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASL *SASL `yaml:"sasl"`
	// TLS configures the connections' TLS (CA, client certificate).
	TLS *brokered.TLS `yaml:"tls"`
}

// SASL are SASL credentials.
type SASL struct {
	Mechanism string `yaml:"mechanism"`
	User      string `yaml:"user"`
	Password  string `yaml:"password"`
}

// Errors.
var (
	ErrBrokers   = errors.New("kafka: brokers is required")
	ErrAcks      = errors.New("kafka: acks must be all, leader or none")
	ErrMechanism = errors.New("kafka: sasl mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
)

// Kind is the kafka sink: {type: kafka, brokers: [host:9092], topic, acks, sasl, tls, …}.
var Kind = sink.Kind{Type: "kafka", Open: Open}

// Open decodes decl and opens the sink. It does not wait for the brokers: unreachable brokers
// are retried by the delivery worker (the sink's stats show it down).
func Open(decl config.Sink, env sink.Env) (sink.Sink, error) {
	var s Settings
	if err := decl.Decode(&s); err != nil {
		return nil, err
	}
	if len(s.Brokers) == 0 {
		return nil, ErrBrokers
	}
	if s.Topic == "" {
		s.Topic = "vinfer-events"
	}
	if s.DetectionsTopic == "" {
		s.DetectionsTopic = "vinfer-detections"
	}
	p := &publisher{events: s.Topic, detections: s.DetectionsTopic, sasl: s.SASL != nil}
	opts := []kgo.Opt{kgo.SeedBrokers(s.Brokers...), kgo.ClientID("vinfer"), kgo.WithHooks(p),
		kgo.DialTimeout(5 * time.Second)}
	switch s.Acks {
	case "", "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("%w (have %q)", ErrAcks, s.Acks)
	}
	if s.AutoCreateTopics == nil || *s.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if s.SASL != nil {
		m, err := s.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	tlsConf, err := s.TLS.Config(env.Dir)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if tlsConf != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsConf))
	}
	return brokered.Open("kafka", &s.Settings, env, func() (deliver.Publisher, error) {
		if s.Timeout > 0 {
			opts = append(opts, kgo.RecordDeliveryTimeout(max(time.Duration(s.Timeout), time.Second))) // kgo's minimum
		}
		p.opts = opts
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		p.cl = cl
		return p, nil
	})
}

func (s *SASL) mechanism() (sasl.Mechanism, error) {
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%w (have %q)", ErrMechanism, s.Mechanism)
}

// publisher produces records with one franz-go client.
type publisher struct {
	cl                 *kgo.Client
	opts               []kgo.Opt
	events, detections string
	sasl               bool
	recs               []*kgo.Record

	mu      sync.Mutex
	connErr error // the last failed connection attempt, cleared by a successful one
}

// OnBrokerConnect implements kgo.HookBrokerConnect: it keeps the last connection error
// (refused, TLS, SASL) to explain a failed delivery.
func (p *publisher) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil && p.sasl && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// Brokers may close the connection on a failed SASL exchange instead of answering.
		err = fmt.Errorf("%w: broker closed the connection during its setup: check the SASL mechanism and credentials", err)
	}
	p.mu.Lock()
	p.connErr = err
	p.mu.Unlock()
}

// Publish implements deliver.Publisher.
func (p *publisher) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	p.recs = p.recs[:0]
	var bad error
	for _, r := range recs {
		d, err := brokered.Decode(r.Data)
		if err != nil {
			bad = fmt.Errorf("%w: %v", deliver.ErrUndeliverable, err)
			break
		}
		topic := p.events
		if d.Kind == brokered.KindDetections {
			topic = p.detections
		}
		p.recs = append(p.recs, &kgo.Record{Topic: topic, Key: d.Stream, Value: d.Body, Headers: []kgo.RecordHeader{
			{Key: "vinfer-id", Value: []byte(d.ID.String())}, {Key: "vinfer-type", Value: d.Type}}})
	}
	if len(p.recs) > 0 {
		errs := make([]error, len(p.recs)) // fresh: a replaced client may still call back
		done := make(chan struct{})
		var pending atomic.Int64
		pending.Store(int64(len(p.recs)))
		for i, r := range p.recs {
			p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				errs[i] = err
				if pending.Add(-1) == 0 {
					close(done)
				}
			})
		}
		select {
		case <-done:
		case <-ctx.Done():
			// The client may hold the records past any deadline (broker gone): replace it so
			// that nothing stale is produced later and its buffer stays bounded.
			p.reset()
			return 0, p.explain(ctx.Err())
		}
		for i, err := range errs {
			if err != nil {
				return i, p.explain(err)
			}
		}
	}
	if bad != nil {
		return len(p.recs), bad
	}
	return len(recs), nil
}

func (p *publisher) explain(err error) error {
	p.mu.Lock()
	cerr := p.connErr
	p.mu.Unlock()
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("kafka: %w (last connection attempt: %v)", err, cerr)
	}
	return fmt.Errorf("kafka: %w", err)
}

// reset replaces the client, closing the old one in the background.
func (p *publisher) reset() {
	cl, err := kgo.NewClient(p.opts...)
	if err != nil {
		return // the options were accepted once; keep the old client
	}
	old := p.cl
	p.cl = cl
	go old.Close()
}

// Close closes the client.
func (p *publisher) Close() error {
	p.cl.Close()
	return nil
}
