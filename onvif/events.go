package onvif

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNoEvents is returned by Subscribe for a device without a PullPoint event service.
var ErrNoEvents = errors.New("onvif: the device has no PullPoint event service")

// PullPoint is a PullPoint subscription (ONVIF Core §9.1.2: CreatePullPointSubscription,
// PullMessages, Renew, Unsubscribe).
type PullPoint struct {
	c    *Client
	addr string // the subscription reference, held to the device's host
}

// Notification is one event message (tt:Message of a wsnt:NotificationMessage).
type Notification struct {
	// Topic is the topic expression (tns1:RuleEngine/CellMotionDetector/Motion).
	Topic string
	// Time is the message's UtcTime; Operation Initialized, Changed or Deleted.
	Time      time.Time
	Operation string
	// Source and Data are the SimpleItems by name.
	Source, Data map[string]string
}

// Active reports whether n says something is happening: a motion or analytics topic whose
// data has a true boolean (IsMotion, State, IsInside, …).
func (n *Notification) Active() bool {
	t := strings.ToLower(n.Topic)
	if !strings.Contains(t, "motion") && !strings.Contains(t, "ruleengine") && !strings.Contains(t, "videoanalytics") {
		return false
	}
	for _, v := range n.Data {
		if b, err := strconv.ParseBool(v); err == nil && b {
			return true
		}
	}
	return false
}

// Subscribe creates a PullPoint subscription that lasts ttl unless renewed (at least 10 s).
func (c *Client) Subscribe(ctx context.Context, ttl time.Duration) (*PullPoint, error) {
	if c.events == "" {
		caps, err := c.Capabilities(ctx)
		if err != nil {
			return nil, err
		}
		if caps.Events == "" {
			return nil, ErrNoEvents
		}
	}
	var r struct {
		Address string `xml:"CreatePullPointSubscriptionResponse>SubscriptionReference>Address"`
	}
	body := `<tev:CreatePullPointSubscription xmlns:tev="` + nsTEV + `"><tev:InitialTerminationTime>` +
		duration(max(ttl, 10*time.Second)) + `</tev:InitialTerminationTime></tev:CreatePullPointSubscription>`
	if err := c.call(ctx, c.events, nsTEV+"/EventPortType/CreatePullPointSubscriptionRequest", body, &r); err != nil {
		return nil, err
	}
	if r.Address == "" {
		return nil, fmt.Errorf("%w: CreatePullPointSubscription: no subscription reference", ErrReply)
	}
	addr, err := c.Confine(r.Address, "http", "https")
	if err != nil {
		return nil, err
	}
	pc := *c
	pc.addressing = true
	return &PullPoint{c: &pc, addr: addr}, nil
}

// Pull waits up to wait (the device's PullMessages timeout, at most 60 s) for at most limit
// messages (1–1024).
func (p *PullPoint) Pull(ctx context.Context, wait time.Duration, limit int) ([]Notification, error) {
	wait = min(max(wait, time.Second), time.Minute)
	limit = min(max(limit, 1), 1024)
	var r struct {
		Messages []struct {
			Topic   string `xml:"Topic"`
			Message struct {
				UtcTime   string `xml:"UtcTime,attr"`
				Operation string `xml:"PropertyOperation,attr"`
				Source    []item `xml:"Source>SimpleItem"`
				Data      []item `xml:"Data>SimpleItem"`
			} `xml:"Message>Message"`
		} `xml:"PullMessagesResponse>NotificationMessage"`
	}
	body := `<tev:PullMessages xmlns:tev="` + nsTEV + `"><tev:Timeout>` + duration(wait) + `</tev:Timeout><tev:MessageLimit>` +
		strconv.Itoa(limit) + `</tev:MessageLimit></tev:PullMessages>`
	c := *p.c
	c.Timeout = max(c.Timeout, DefaultTimeout) + wait // the device holds the request up to wait
	if err := c.call(ctx, p.addr, nsTEV+"/PullPointSubscription/PullMessagesRequest", body, &r); err != nil {
		return nil, err
	}
	out := make([]Notification, 0, len(r.Messages))
	for _, m := range r.Messages[:min(len(r.Messages), limit)] {
		n := Notification{Topic: strings.TrimSpace(m.Topic), Operation: m.Message.Operation,
			Source: items(m.Message.Source), Data: items(m.Message.Data)}
		n.Time, _ = time.Parse(time.RFC3339, m.Message.UtcTime)
		out = append(out, n)
	}
	return out, nil
}

// Unsubscribe ends the subscription.
func (p *PullPoint) Unsubscribe(ctx context.Context) error {
	var r struct{}
	return p.c.call(ctx, p.addr, "http://docs.oasis-open.org/wsn/bw-2/SubscriptionManager/UnsubscribeRequest",
		`<wsnt:Unsubscribe xmlns:wsnt="`+nsWSNT+`"/>`, &r)
}

// Renew extends the subscription by ttl.
func (p *PullPoint) Renew(ctx context.Context, ttl time.Duration) error {
	var r struct{}
	return p.c.call(ctx, p.addr, "http://docs.oasis-open.org/wsn/bw-2/SubscriptionManager/RenewRequest",
		`<wsnt:Renew xmlns:wsnt="`+nsWSNT+`"><wsnt:TerminationTime>`+duration(ttl)+`</wsnt:TerminationTime></wsnt:Renew>`, &r)
}

type item struct {
	Name  string `xml:"Name,attr"`
	Value string `xml:"Value,attr"`
}

func items(in []item) map[string]string {
	out := make(map[string]string, len(in))
	for _, it := range in[:min(len(in), 32)] {
		out[it.Name] = it.Value
	}
	return out
}

// duration writes d as an XML Schema duration in whole seconds (PT10S).
func duration(d time.Duration) string {
	return "PT" + strconv.Itoa(int(d/time.Second)) + "S"
}
