package onvif

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to one device. It is not safe for concurrent use (it keeps the services'
// addresses and the device's clock offset): one per goroutine.
type Client struct {
	// XAddr is the device service: http://host[:port]/onvif/device_service.
	XAddr string
	// User and Password authenticate each request (UsernameToken digest); empty: none.
	User, Password string
	// HTTP is the HTTP client (default: a zero http.Client; its CheckRedirect is replaced:
	// redirects are not followed); Timeout bounds each request
	// (default DefaultTimeout).
	HTTP    *http.Client
	Timeout time.Duration
	// Now is the clock for the tokens' Created (default time.Now). A device refuses tokens too
	// far from its own clock: the first GetCapabilities reads the device's clock
	// (GetSystemDateAndTime) and later tokens follow it.
	Now func() time.Time

	base       *url.URL
	media      string        // the media service's address, from GetCapabilities
	events     string        // the event service's address
	addressing bool          // add WS-Addressing To and Action (PullPoint requests)
	anonymous  bool          // no UsernameToken (GetSystemDateAndTime)
	skew       time.Duration // the device's clock minus ours, added to tokens' Created
	synced     bool
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// syncClock reads the device's clock (GetSystemDateAndTime, which needs no credentials: ONVIF
// Core §5.9.4.2) and keeps its difference from ours for the tokens' Created, so that a camera
// whose clock drifted still accepts them. A device that does not answer keeps ours.
func (c *Client) syncClock(ctx context.Context) {
	if c.synced {
		return
	}
	c.synced = true
	var r struct {
		UTC struct {
			Year   int `xml:"Date>Year"`
			Month  int `xml:"Date>Month"`
			Day    int `xml:"Date>Day"`
			Hour   int `xml:"Time>Hour"`
			Minute int `xml:"Time>Minute"`
			Second int `xml:"Time>Second"`
		} `xml:"GetSystemDateAndTimeResponse>SystemDateAndTime>UTCDateTime"`
	}
	anon := *c
	anon.anonymous = true
	sent := c.now()
	if err := anon.call(ctx, c.base.String(), nsTDS+"/GetSystemDateAndTime",
		`<tds:GetSystemDateAndTime xmlns:tds="`+nsTDS+`"/>`, &r); err != nil || r.UTC.Year < 2000 {
		return
	}
	u := r.UTC
	device := time.Date(u.Year, time.Month(u.Month), u.Day, u.Hour, u.Minute, u.Second, 0, time.UTC)
	mid := sent.Add(c.now().Sub(sent) / 2)
	if d := device.Sub(mid); d.Abs() > 5*time.Second { // within a few seconds: keep ours
		c.skew = d
	}
}

// Capabilities are the services a device offers.
type Capabilities struct {
	// Media and Events are the services' addresses (held to the device's host); Events is
	// empty when the device has no event service, PullPoint whether it supports PullPoint
	// subscriptions.
	Media, Events string
	PullPoint     bool
}

// Profile is a media profile.
type Profile struct {
	Token, Name string
	// Encoding is the video encoder's (H264, H265, JPEG…); Width and Height its resolution.
	Encoding      string
	Width, Height int
}

func (c *Client) init() error {
	if c.base != nil {
		return nil
	}
	u, err := url.Parse(c.XAddr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return ErrAddress
	}
	c.base = u
	return nil
}

// Confine returns addr (a service address or URI a device reported) with its host replaced
// by the device's (the port kept), so that a device cannot make the client reach another
// host. Errors: ErrReply for an addr that does not parse or whose scheme is not want.
func (c *Client) Confine(addr string, want ...string) (string, error) {
	if err := c.init(); err != nil {
		return "", err
	}
	u, err := url.Parse(strings.TrimSpace(addr))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: a reported address does not parse", ErrReply)
	}
	ok := false
	for _, s := range want {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return "", fmt.Errorf("%w: a reported address has scheme %q, want %v", ErrReply, u.Scheme, want)
	}
	port := u.Port()
	if port == "" && (u.Scheme == "http" || u.Scheme == "https") {
		port = c.base.Port()
	}
	u.User = nil
	if port == "" {
		u.Host = c.base.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	} else {
		u.Host = net.JoinHostPort(c.base.Hostname(), port)
	}
	return u.String(), nil
}

// Capabilities asks the device service for its services (GetCapabilities, category All) and
// keeps the media and event services' addresses for the other calls.
func (c *Client) Capabilities(ctx context.Context) (Capabilities, error) {
	var caps Capabilities
	if err := c.init(); err != nil {
		return caps, err
	}
	c.syncClock(ctx)
	var r struct {
		Capabilities struct {
			Media struct {
				XAddr string `xml:"XAddr"`
			} `xml:"Media"`
			Events struct {
				XAddr              string `xml:"XAddr"`
				WSPullPointSupport bool   `xml:"WSPullPointSupport"`
			} `xml:"Events"`
		} `xml:"GetCapabilitiesResponse>Capabilities"`
	}
	err := c.call(ctx, c.base.String(), nsTDS+"/GetCapabilities",
		`<tds:GetCapabilities xmlns:tds="`+nsTDS+`"><tds:Category>All</tds:Category></tds:GetCapabilities>`, &r)
	if err != nil {
		return caps, err
	}
	if r.Capabilities.Media.XAddr == "" {
		return caps, fmt.Errorf("%w: GetCapabilities: no media service", ErrReply)
	}
	if caps.Media, err = c.Confine(r.Capabilities.Media.XAddr, "http", "https"); err != nil {
		return caps, err
	}
	if r.Capabilities.Events.XAddr != "" {
		if caps.Events, err = c.Confine(r.Capabilities.Events.XAddr, "http", "https"); err != nil {
			return caps, err
		}
		caps.PullPoint = r.Capabilities.Events.WSPullPointSupport
	}
	c.media, c.events = caps.Media, caps.Events
	return caps, nil
}

func (c *Client) mediaAddr(ctx context.Context) (string, error) {
	if c.media == "" {
		if _, err := c.Capabilities(ctx); err != nil {
			return "", err
		}
	}
	return c.media, nil
}

// Profiles returns the media profiles (GetProfiles), at most 64.
func (c *Client) Profiles(ctx context.Context) ([]Profile, error) {
	addr, err := c.mediaAddr(ctx)
	if err != nil {
		return nil, err
	}
	var r struct {
		Profiles []struct {
			Token string `xml:"token,attr"`
			Name  string `xml:"Name"`
			Video struct {
				Encoding   string `xml:"Encoding"`
				Resolution struct {
					Width  int `xml:"Width"`
					Height int `xml:"Height"`
				} `xml:"Resolution"`
			} `xml:"VideoEncoderConfiguration"`
		} `xml:"GetProfilesResponse>Profiles"`
	}
	if err := c.call(ctx, addr, nsTRT+"/GetProfiles", `<trt:GetProfiles xmlns:trt="`+nsTRT+`"/>`, &r); err != nil {
		return nil, err
	}
	var out []Profile
	for _, p := range r.Profiles[:min(len(r.Profiles), 64)] {
		if p.Token == "" {
			continue
		}
		out = append(out, Profile{Token: p.Token, Name: p.Name, Encoding: p.Video.Encoding,
			Width: p.Video.Resolution.Width, Height: p.Video.Resolution.Height})
	}
	return out, nil
}

// StreamURI returns profile token's RTSP URI (GetStreamUri, RTP-Unicast over RTSP), held to
// the device's host, without credentials.
func (c *Client) StreamURI(ctx context.Context, token string) (string, error) {
	addr, err := c.mediaAddr(ctx)
	if err != nil {
		return "", err
	}
	var r struct {
		URI string `xml:"GetStreamUriResponse>MediaUri>Uri"`
	}
	body := `<trt:GetStreamUri xmlns:trt="` + nsTRT + `" xmlns:tt="` + nsTT + `"><trt:StreamSetup><tt:Stream>RTP-Unicast</tt:Stream>` +
		`<tt:Transport><tt:Protocol>RTSP</tt:Protocol></tt:Transport></trt:StreamSetup><trt:ProfileToken>` + xmlText(token) +
		`</trt:ProfileToken></trt:GetStreamUri>`
	if err := c.call(ctx, addr, nsTRT+"/GetStreamUri", body, &r); err != nil {
		return "", err
	}
	if r.URI == "" {
		return "", fmt.Errorf("%w: GetStreamUri: no URI", ErrReply)
	}
	return c.Confine(r.URI, "rtsp", "rtsps")
}
