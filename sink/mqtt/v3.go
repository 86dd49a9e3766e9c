package mqtt

import (
	"context"
	"fmt"
	"time"

	paho3 "github.com/eclipse/paho.mqtt.golang"
)

// v3 is an MQTT 3.1.1 connection (eclipse/paho.mqtt.golang); it reconnects by itself.
type v3 struct {
	o    options
	c    paho3.Client
	last lastError
}

func newV3(o options) (*v3, error) {
	v := &v3{o: o}
	opts := paho3.NewClientOptions().AddBroker(o.brokerURL().String()).
		SetClientID(o.clientID).SetProtocolVersion(4).SetCleanSession(true).
		SetKeepAlive(keepAlive).SetConnectTimeout(connectTimeout).SetWriteTimeout(connectTimeout).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(retryDelay).
		SetMaxReconnectInterval(10*time.Second).
		SetWill(o.available, "offline", o.qos, true).
		SetOnConnectHandler(func(c paho3.Client) {
			v.last.set(nil)
			c.Publish(o.available, o.qos, true, "online") // not awaited: handlers must not block
		}).
		SetConnectionNotificationHandler(func(_ paho3.Client, n paho3.ConnectionNotification) {
			switch n := n.(type) {
			case paho3.ConnectionNotificationFailed:
				v.last.set(n.Reason)
			case paho3.ConnectionNotificationBrokerFailed:
				v.last.set(n.Reason)
			case paho3.ConnectionNotificationLost:
				v.last.set(n.Reason)
			}
		})
	if o.username != "" {
		opts.SetUsername(o.username).SetPassword(o.password)
	}
	if o.tls != nil {
		opts.SetTLSConfig(o.tls)
	}
	v.c = paho3.NewClient(opts)
	v.c.Connect() // completes once connected; retried in the background
	return v, nil
}

func (v *v3) publish(ctx context.Context, msgs []message) (int, error) {
	if !v.c.IsConnectionOpen() {
		return 0, v.last.notConnected()
	}
	toks := make([]paho3.Token, 0, min(len(msgs), v.o.inflight))
	done := 0
	wait := func() error {
		for _, t := range toks {
			select {
			case <-t.Done():
			case <-ctx.Done():
				return fmt.Errorf("mqtt: waiting for the broker's acknowledgement: %w", ctx.Err())
			}
			if err := t.Error(); err != nil {
				return fmt.Errorf("mqtt: %w", err)
			}
			done++
		}
		toks = toks[:0]
		return nil
	}
	for _, m := range msgs {
		if len(toks) == v.o.inflight {
			if err := wait(); err != nil {
				return done, err
			}
		}
		toks = append(toks, v.c.Publish(m.topic, v.o.qos, m.retain, m.payload))
	}
	return done, wait()
}

func (v *v3) close() error {
	if v.c.IsConnectionOpen() {
		v.c.Publish(v.o.available, v.o.qos, true, "offline").WaitTimeout(closeTimeout)
	}
	v.c.Disconnect(uint(closeTimeout / time.Millisecond))
	return nil
}
