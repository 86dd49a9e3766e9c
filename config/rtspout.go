package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// RTSPOut serves each analysed stream over RTSP as its own video plus an ONVIF metadata track
// (output.rtsp; package onvifmeta, docs/onvif-metadata.md) at rtsp://listen/<stream id>.
type RTSPOut struct {
	// Listen is host:port (default 127.0.0.1:8554, loopback only).
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// MaxClients bounds the playing sessions over all streams (default 16); more get 503.
	MaxClients int `yaml:"max_clients,omitempty" json:"max_clients,omitempty"`
	// User is the RTSP user name (default vinfer); the password is Password, else output.token.
	// Each of output.tokens also reads, as its label and token, limited to its streams. With
	// none of them, clients need no credentials (refused beyond loopback unless
	// output.insecure).
	User     string `yaml:"user,omitempty" json:"user,omitempty"`
	Password string `yaml:"password,omitempty" json:"-"`
	// UDPPort, when set, also offers RTP over UDP from this even port (RTCP on the next);
	// default TCP only.
	UDPPort int `yaml:"udp_port,omitempty" json:"udp_port,omitempty"`
	// WriteQueue is the RTP packets queued per client, a power of two from 16 (default 1024);
	// a client whose queue fills is dropped, never the pipeline.
	WriteQueue int `yaml:"write_queue,omitempty" json:"write_queue,omitempty"`
}

// ErrRTSPOut wraps a bad output.rtsp setting.
var ErrRTSPOut = errors.New("output.rtsp")

// RTSPPassword is the password RTSP clients need: output.rtsp.password, else output.token.
func (o *Output) RTSPPassword() string {
	if o.RTSP != nil && o.RTSP.Password != "" {
		return o.RTSP.Password
	}
	return o.Token
}

// validateRTSP checks output.rtsp.
func (o *Output) validateRTSP() error {
	r := o.RTSP
	if r == nil {
		return nil
	}
	if r.Listen != "" {
		host, port, err := net.SplitHostPort(r.Listen)
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 {
			return fmt.Errorf("%w: listen %q: host:port", ErrRTSPOut, r.Listen)
		}
		ip := net.ParseIP(host)
		loop := host == "localhost" || (ip != nil && ip.IsLoopback())
		if !loop && o.RTSPPassword() == "" && len(o.Tokens) == 0 && !o.Insecure {
			return fmt.Errorf("%w: listen %q beyond loopback without a password (set output.token or output.rtsp.password, or output.insecure: true)", ErrRTSPOut, r.Listen)
		}
	}
	if r.MaxClients < 0 {
		return fmt.Errorf("%w: max_clients %d", ErrRTSPOut, r.MaxClients)
	}
	if p := r.UDPPort; p < 0 || p%2 != 0 || p > 65532 {
		return fmt.Errorf("%w: udp_port %d: an even port below 65534 (RTCP on the next)", ErrRTSPOut, p)
	}
	if q := r.WriteQueue; q != 0 && (q < 16 || q&(q-1) != 0) {
		return fmt.Errorf("%w: write_queue %d: a power of two from 16", ErrRTSPOut, q)
	}
	return nil
}
