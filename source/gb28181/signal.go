package gb28181

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/urlparam"
)

// Channel is a stream in signalling mode, gb28181://<device id>/<channel id>[?transport=...]:
// vinfer, as the GB28181 platform the device registered with, INVITEs the channel itself
// (package gb28181/platform) instead of waiting for media another platform asked for.
type Channel struct {
	// DeviceID is the registered device's 20-digit SIP ID (GB/T 28181-2016 Annex D).
	DeviceID string
	// ChannelID is the 20-digit ID of the channel (camera) in the device's catalog; for a
	// single camera often its device ID.
	ChannelID string
	// Transport is TransportUDP (default), TransportTCPPassive or TransportTCPActive.
	Transport string
}

// Signaller opens signalling-mode streams: the application's GB28181 platform, running when
// its configuration has a gb28181: section.
type Signaller interface {
	OpenChannel(streamID string, ch Channel) (source.Source, error)
}

// ErrNoSignalling is returned for a signalling-mode stream when no platform runs.
var ErrNoSignalling = errors.New("gb28181://<device id>/<channel id> needs vinfer's GB28181 platform: add a gb28181: section to the configuration")

var (
	signallerMu sync.RWMutex
	signaller   Signaller
)

// SetSignaller installs the platform that opens signalling-mode streams (nil: none) and
// returns a function restoring the previous one.
func SetSignaller(s Signaller) (restore func()) {
	signallerMu.Lock()
	defer signallerMu.Unlock()
	prev := signaller
	signaller = s
	return func() {
		signallerMu.Lock()
		defer signallerMu.Unlock()
		signaller = prev
	}
}

func currentSignaller() Signaller {
	signallerMu.RLock()
	defer signallerMu.RUnlock()
	return signaller
}

var gbID = regexp.MustCompile(`^[0-9]{20}$`)

// IsSignalling reports whether raw is of the signalling form: the host part a 20-digit device
// ID without a port (the media form needs host:port).
func IsSignalling(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Port() == "" && gbID.MatchString(u.Hostname())
}

// ParseChannel reads gb28181://<device id>/<channel id>[?transport=udp|tcp-passive|tcp-active].
func ParseChannel(raw string) (Channel, error) {
	u, q, err := urlparam.Parse(raw)
	if err != nil {
		return Channel{}, fmt.Errorf("gb28181: %w", err)
	}
	ch := Channel{DeviceID: u.Hostname(), ChannelID: strings.Trim(u.Path, "/"),
		Transport: q.OneOf("transport", TransportUDP, TransportUDP, TransportTCPPassive, TransportTCPActive)}
	if err := q.Err(); err != nil {
		return Channel{}, fmt.Errorf("gb28181: %w", err)
	}
	if !gbID.MatchString(ch.DeviceID) || u.Port() != "" {
		return Channel{}, fmt.Errorf("gb28181: device id %q must be 20 digits, without a port", u.Host)
	}
	if !gbID.MatchString(ch.ChannelID) {
		return Channel{}, fmt.Errorf("gb28181: channel id %q must be 20 digits: gb28181://<device id>/<channel id>", ch.ChannelID)
	}
	return ch, nil
}
