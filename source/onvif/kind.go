// Package onvif opens onvif://user:password@host[:port]/profile streams: it asks the camera
// (package onvif: GetCapabilities, GetProfiles, GetStreamUri with a UsernameToken digest) for
// the profile's RTSP URI and plays it as an rtsp:// stream with the same credentials
// (docs/onvif.md).
package onvif

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/vinfer/vinfer/config"
	onvifc "github.com/vinfer/vinfer/onvif"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/rtsp"
)

// Errors.
var (
	// ErrURL is returned for an onvif:// URL without a host, with parameters, or with a path of
	// more than one level.
	ErrURL = errors.New("onvif source: the URL must be onvif:// with the user, password, host[:port] and one path level, the profile's token or name (none: the first), without parameters")
	// ErrNoProfile is returned when the camera has no profile of that token or name.
	ErrNoProfile = errors.New("onvif source: no such profile")
)

// Kind opens onvif:// sources; the stream's transport setting applies to the RTSP session.
var Kind = source.Kind{Schemes: []string{"onvif"}, Open: open}

// Target is what an onvif:// URL names.
type Target struct {
	// XAddr is the device service: http://host[:port]/onvif/device_service.
	XAddr          string
	User, Password string
	// Profile is the profile's token or name; "": the first.
	Profile string
}

// Parse reads an onvif://user:password@host[:port]/profile URL.
func Parse(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "onvif" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Target{}, ErrURL
	}
	p := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(p, "/") || len(p) > 64 {
		return Target{}, ErrURL
	}
	t := Target{XAddr: "http://" + u.Host + "/onvif/device_service", Profile: p}
	if u.User != nil {
		t.User = u.User.Username()
		t.Password, _ = u.User.Password()
	}
	return t, nil
}

// Resolve asks the camera for the profile's RTSP URI, with the target's credentials in it.
func Resolve(ctx context.Context, t Target, c *onvifc.Client) (string, error) {
	if c == nil {
		c = &onvifc.Client{}
	}
	c.XAddr, c.User, c.Password = t.XAddr, t.User, t.Password
	ps, err := c.Profiles(ctx)
	if err != nil {
		return "", err
	}
	token := ""
	for _, p := range ps {
		if t.Profile == "" || p.Token == t.Profile || p.Name == t.Profile {
			token = p.Token
			break
		}
	}
	if token == "" {
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			names = append(names, p.Token+" ("+p.Name+")")
		}
		return "", fmt.Errorf("%w %q (have %s)", ErrNoProfile, t.Profile, strings.Join(names, ", "))
	}
	uri, err := c.StreamURI(ctx, token)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: a stream URI that does not parse", onvifc.ErrReply)
	}
	if t.User != "" {
		u.User = url.UserPassword(t.User, t.Password)
	}
	return u.String(), nil
}

func open(s *config.Stream, p source.Policy) (source.Source, error) {
	t, err := Parse(s.Source)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout())
	defer cancel()
	uri, err := Resolve(ctx, t, &onvifc.Client{Timeout: p.Timeout()})
	if err != nil {
		return nil, err
	}
	r := &rtsp.Source{URL: uri, Transport: s.Transport.String(), ReadTimeout: p.Timeout(), Logger: slog.Default().With("stream", s.ID)}
	if err := r.Init(); err != nil {
		return nil, err
	}
	return r, nil
}
