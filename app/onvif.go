package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	onvifc "github.com/vinfer/vinfer/onvif"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/onvif"
)

// cameraEvents are the ONVIF event watches of onvif:// streams with activity gating: a
// camera's motion or analytics event wakes its idle stream (docs/onvif.md).
type cameraEvents struct {
	mu     sync.Mutex
	stops  map[string]func()          // stream id → cancel and wait
	counts map[string]*cameraCounters // stream id → its counters (kept after the stream, like metrics)
}

type cameraCounters struct{ received, wakes, failures atomic.Uint64 }

var _ defs.CameraEvents = (*App)(nil)

// CameraEvents implements defs.CameraEvents.
func (a *App) CameraEvents() []defs.CameraEventCounts {
	a.cameras.mu.Lock()
	defer a.cameras.mu.Unlock()
	out := make([]defs.CameraEventCounts, 0, len(a.cameras.counts))
	for id, c := range a.cameras.counts {
		out = append(out, defs.CameraEventCounts{Stream: id, Received: c.received.Load(), Wakes: c.wakes.Load(), Failures: c.failures.Load()})
	}
	slices.SortFunc(out, func(x, y defs.CameraEventCounts) int { return strings.Compare(x.Stream, y.Stream) })
	return out
}

// watchCamera starts s's event watch when s is an onvif:// stream with activity gating.
func (a *App) watchCamera(s *config.Stream) {
	if source.Scheme(s.Source) != "onvif" || !s.Activity.Enabled() {
		return
	}
	t, err := onvif.Parse(s.Source)
	if err != nil {
		return
	}
	a.unwatchCamera(s.ID) // a stream added again under its id: one watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	id := s.ID
	a.cameras.mu.Lock()
	if a.cameras.stops == nil {
		a.cameras.stops, a.cameras.counts = map[string]func(){}, map[string]*cameraCounters{}
	}
	n := a.cameras.counts[id]
	if n == nil {
		n = &cameraCounters{}
		a.cameras.counts[id] = n
	}
	go func() {
		defer close(done)
		onvif.WatchEvents(ctx, t, onvif.Watch{
			Wake:     func() { n.wakes.Add(1); a.WakeStream(id) },
			Received: func(k int) { n.received.Add(uint64(k)) },
			Failed:   func(error) { n.failures.Add(1) },
			Log:      a.Log.With("stream", id),
		})
	}()
	a.cameras.stops[id] = func() { cancel(); <-done }
	a.cameras.mu.Unlock()
}

// unwatchCamera stops stream id's event watch, if any ("": every one).
func (a *App) unwatchCamera(id string) {
	a.cameras.mu.Lock()
	var stops []func()
	for k, stop := range a.cameras.stops {
		if id == "" || k == id {
			stops = append(stops, stop)
			delete(a.cameras.stops, k)
		}
	}
	a.cameras.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

var _ defs.Cameras = (*App)(nil)

// discovered is the last camera discovery's result.
type discovered struct {
	mu   sync.Mutex
	list []defs.Camera
}

// probeWindow is how long a discovery waits for answers.
const probeWindow = 3 * time.Second

// DiscoverCameras implements defs.Cameras.
func (a *App) DiscoverCameras(ctx context.Context, target string) ([]defs.Camera, error) {
	if target != "" {
		host, _, err := net.SplitHostPort(target)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || ip.To4() == nil || !(ip.IsLoopback() || ip.IsPrivate()) {
			return nil, defs.ErrCameraTarget
		}
	}
	found, err := onvifc.Probe(ctx, target, probeWindow)
	if err != nil {
		return nil, err
	}
	list := make([]defs.Camera, 0, len(found))
	for _, d := range found {
		xaddr, ok := answeredFrom(d.XAddrs[0], d.From)
		if !ok {
			continue
		}
		sum := sha256.Sum256([]byte(d.Endpoint))
		list = append(list, defs.Camera{ID: hex.EncodeToString(sum[:6]), Endpoint: d.Endpoint, Name: d.Name,
			Hardware: d.Hardware, XAddr: xaddr, From: d.From})
	}
	a.found.mu.Lock()
	a.found.list = list
	a.found.mu.Unlock()
	return slices.Clone(list), nil
}

// Cameras implements defs.Cameras.
func (a *App) Cameras() []defs.Camera {
	a.found.mu.Lock()
	defer a.found.mu.Unlock()
	return slices.Clone(a.found.list)
}

// CameraProfiles implements defs.Cameras.
func (a *App) CameraProfiles(ctx context.Context, id, user, password string) ([]defs.CameraProfile, error) {
	var cam *defs.Camera
	for _, c := range a.Cameras() {
		if c.ID == id {
			cam = &c
			break
		}
	}
	if cam == nil {
		return nil, defs.ErrNoCamera
	}
	c := &onvifc.Client{XAddr: cam.XAddr, User: user, Password: password}
	ps, err := c.Profiles(ctx)
	if errors.Is(err, onvifc.ErrAuth) {
		return nil, fmt.Errorf("%w (%v)", defs.ErrCameraAuth, err)
	}
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cam.XAddr)
	if err != nil {
		return nil, err
	}
	out := make([]defs.CameraProfile, 0, len(ps))
	for _, p := range ps {
		src := url.URL{Scheme: "onvif", Host: u.Host, Path: "/" + p.Token}
		if user != "" {
			src.User = url.User(user)
		}
		out = append(out, defs.CameraProfile{Token: p.Token, Name: p.Name, Encoding: p.Encoding, Width: p.Width, Height: p.Height, Source: src.String()})
	}
	return out, nil
}

// answeredFrom returns xaddr with its host made the IP the answer came from (from: ip:port),
// its port and path kept: a probe answer cannot point vinfer's requests at another host.
func answeredFrom(xaddr, from string) (string, bool) {
	u, err := url.Parse(xaddr)
	ip, _, err2 := net.SplitHostPort(from)
	if err != nil || err2 != nil {
		return "", false
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(ip, port)
	} else {
		u.Host = ip
	}
	return u.String(), true
}
