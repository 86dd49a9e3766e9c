package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// v5 is an MQTT 5 connection (eclipse/paho.golang autopaho); it reconnects by itself.
type v5 struct {
	o      options
	cm     *autopaho.ConnectionManager
	cancel context.CancelFunc
	last   lastError
}

func newV5(o options) (*v5, error) {
	v := &v5{o: o}
	cfg := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{o.brokerURL()},
		TlsCfg:                        o.tls,
		KeepAlive:                     uint16(keepAlive.Seconds()),
		CleanStartOnInitialConnection: true,
		ConnectRetryDelay:             retryDelay,
		ConnectTimeout:                connectTimeout,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			v.last.set(nil)
			go func() { // handlers must not block
				ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
				defer cancel()
				cm.Publish(ctx, &paho.Publish{Topic: o.available, QoS: o.qos, Retain: true, Payload: []byte("online")})
			}()
		},
		OnConnectError: func(err error) { v.last.set(err) },
		ClientConfig: paho.ClientConfig{
			ClientID:           o.clientID,
			OnClientError:      func(err error) { v.last.set(err) },
			OnServerDisconnect: func(d *paho.Disconnect) { v.last.set(fmt.Errorf("server disconnected: reason %d", d.ReasonCode)) },
		},
	}
	cfg.SetWillMessage(o.available, []byte("offline"), o.qos, true)
	if o.username != "" {
		cfg.SetUsernamePassword(o.username, []byte(o.password))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	v.cm, v.cancel = cm, cancel
	return v, nil
}

func (v *v5) publish(ctx context.Context, msgs []message) (int, error) {
	errs := make([]error, len(msgs))
	sem := make(chan struct{}, v.o.inflight)
	var wg sync.WaitGroup
	for i, m := range msgs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := v.cm.Publish(ctx, &paho.Publish{Topic: m.topic, QoS: v.o.qos, Retain: m.retain, Payload: m.payload})
			if errors.Is(err, autopaho.ConnectionDownError) {
				err = v.last.notConnected()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, ErrNotConnected) {
			return i, err
		}
		if err != nil {
			return i, fmt.Errorf("mqtt: %w", err)
		}
	}
	return len(msgs), nil
}

func (v *v5) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if v.cm.AwaitConnection(ctx) == nil {
		v.cm.Publish(ctx, &paho.Publish{Topic: v.o.available, QoS: v.o.qos, Retain: true, Payload: []byte("offline")})
		v.cm.Disconnect(ctx)
	}
	v.cancel()
	<-v.cm.Done()
	return nil
}
