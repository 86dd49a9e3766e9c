package defs

import (
	"context"
	"errors"
)

// Cameras finds ONVIF cameras (WS-Discovery) and reads their profiles for the user to add
// as onvif:// streams; nothing is added by itself (docs/onvif.md).
type Cameras interface {
	// DiscoverCameras probes for cameras (target "": the local segment's multicast group;
	// else a loopback or private IPv4 host:port, ErrCameraTarget otherwise) and keeps what
	// answered as the discovered list.
	DiscoverCameras(ctx context.Context, target string) ([]Camera, error)
	// Cameras returns the last discovery's cameras.
	Cameras() []Camera
	// CameraProfiles reads a discovered camera's profiles with the credentials given
	// (ErrNoCamera for an id not discovered); their Source URLs hold the user, not the
	// password.
	CameraProfiles(ctx context.Context, id, user, password string) ([]CameraProfile, error)
}

// ErrNoCamera is returned for a camera id the last discovery did not find.
var ErrNoCamera = errors.New("no such discovered camera: discover again")

// ErrCameraAuth is returned when a camera refuses the credentials.
var ErrCameraAuth = errors.New("the camera refused the credentials")

// ErrCameraTarget is returned for a probe target that is not a loopback or private IPv4
// address with a port.
var ErrCameraTarget = errors.New("a probe target must be a loopback or private IPv4 address with a port")

// Camera is a discovered ONVIF camera.
type Camera struct {
	// ID names it in the API (a hash of its endpoint reference).
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Name     string `json:"name,omitempty"`
	Hardware string `json:"hardware,omitempty"`
	// XAddr is its device service; From where its answer came from.
	XAddr string `json:"xaddr"`
	From  string `json:"from"`
}

// CameraProfile is one of a camera's media profiles.
type CameraProfile struct {
	Token    string `json:"token"`
	Name     string `json:"name"`
	Encoding string `json:"encoding"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	// Source is the stream source for it: onvif://user@host:port/token (add the password:
	// onvif://user:password@…).
	Source string `json:"source"`
}

// CameraEvents counts the camera events of onvif:// streams with activity gating (their
// PullPoint subscriptions).
type CameraEvents interface {
	// CameraEvents returns each such stream's counters, sorted by stream id.
	CameraEvents() []CameraEventCounts
}

// CameraEventCounts are one stream's camera event counters since it started.
type CameraEventCounts struct {
	Stream string
	// Received counts event messages pulled, Wakes those pulls that woke the stream (a message
	// reporting activity), Failures lost or refused subscriptions (each made again).
	Received, Wakes, Failures uint64
}
