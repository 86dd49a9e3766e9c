package config

import "github.com/vinfer/vinfer/internal/enum"

// Decoder is where a stream's video is decoded.
type Decoder uint8

// Decoders.
const (
	// DecoderCPU is FFmpeg's software decoders (the default).
	DecoderCPU Decoder = iota
	// DecoderNVDEC is NVIDIA's hardware decoder: frames stay in GPU memory and are preprocessed
	// there; the stream's model needs provider: cuda.
	DecoderNVDEC
)

var decoderNames = []string{"cpu", "nvdec"}

func (d Decoder) String() string { return enum.Name(d, decoderNames) }

// MarshalText implements encoding.TextMarshaler.
func (d Decoder) MarshalText() ([]byte, error) { return enum.Text("decoder", d, decoderNames) }

// UnmarshalText implements encoding.TextUnmarshaler: cpu or nvdec.
func (d *Decoder) UnmarshalText(b []byte) (err error) {
	*d, err = enum.Parse[Decoder]("decoder", decoderNames, b)
	return err
}

// DropPolicy is what a stream does when inference falls behind it.
type DropPolicy uint8

// Drop policies.
const (
	// DropAuto is DropOldest for live sources and DropBlock for files (the default).
	DropAuto DropPolicy = iota
	// DropOldest discards the oldest queued frame for the newest (counted): results stay
	// current and latency bounded.
	DropOldest
	// DropBlock makes the stream wait for room: nothing is lost.
	DropBlock
)

var dropNames = []string{"", "oldest", "block"}

func (p DropPolicy) String() string {
	if p == DropAuto {
		return "auto"
	}
	return enum.Name(p, dropNames)
}

// MarshalText implements encoding.TextMarshaler (DropAuto is the empty word).
func (p DropPolicy) MarshalText() ([]byte, error) { return enum.Text("drop", p, dropNames) }

// UnmarshalText implements encoding.TextUnmarshaler: oldest, block, or empty for the default.
func (p *DropPolicy) UnmarshalText(b []byte) (err error) {
	*p, err = enum.Parse[DropPolicy]("drop", dropNames, b)
	return err
}

// Resolve returns the policy a stream runs with: DropAuto becomes DropOldest for a live source
// and DropBlock for a file.
func (p DropPolicy) Resolve(live bool) DropPolicy {
	switch {
	case p != DropAuto:
		return p
	case live:
		return DropOldest
	}
	return DropBlock
}

// Transport is how an RTSP source receives media.
type Transport uint8

// RTSP transports.
const (
	// TransportAuto tries UDP and falls back to TCP when no packet arrives (the default).
	TransportAuto Transport = iota
	// TransportTCP interleaves media in the RTSP connection (RFC 2326 §10.12).
	TransportTCP
	// TransportUDP receives RTP/RTCP on a UDP port pair.
	TransportUDP
)

var transportNames = []string{"auto", "tcp", "udp"}

func (t Transport) String() string { return enum.Name(t, transportNames) }

// MarshalText implements encoding.TextMarshaler.
func (t Transport) MarshalText() ([]byte, error) { return enum.Text("transport", t, transportNames) }

// UnmarshalText implements encoding.TextUnmarshaler: auto, tcp or udp (empty: auto).
func (t *Transport) UnmarshalText(b []byte) (err error) {
	if len(b) == 0 {
		*t = TransportAuto
		return nil
	}
	*t, err = enum.Parse[Transport]("transport", transportNames, b)
	return err
}

// Provider is the ONNX Runtime execution provider a model runs on.
type Provider uint8

// Execution providers.
const (
	ProviderCPU Provider = iota // the default
	ProviderCUDA
	ProviderTensorRT
)

var providerNames = []string{"cpu", "cuda", "tensorrt"}

func (p Provider) String() string { return enum.Name(p, providerNames) }

// OnGPU reports whether the provider runs on an NVIDIA GPU.
func (p Provider) OnGPU() bool { return p == ProviderCUDA || p == ProviderTensorRT }

// MarshalText implements encoding.TextMarshaler.
func (p Provider) MarshalText() ([]byte, error) { return enum.Text("provider", p, providerNames) }

// UnmarshalText implements encoding.TextUnmarshaler: cpu, cuda or tensorrt (empty: cpu).
func (p *Provider) UnmarshalText(b []byte) (err error) {
	if len(b) == 0 {
		*p = ProviderCPU
		return nil
	}
	*p, err = enum.Parse[Provider]("provider", providerNames, b)
	return err
}

// Concealed is what a stream does with pictures its decoder repaired by error concealment (a
// lost packet's macroblocks filled from neighbours: AVFrame.decode_error_flags).
type Concealed uint8

// Concealed policies.
const (
	// ConcealedInfer infers on them, as FFmpeg and VLC show them (the default): under packet
	// loss a stream keeps its frame rate; the source counts the damaged access units.
	ConcealedInfer Concealed = iota
	// ConcealedDrop drops them (counted as decode errors) until a clean picture: no detection
	// on smeared macroblocks, at the cost of frames under loss.
	ConcealedDrop
)

var concealedNames = []string{"infer", "drop"}

func (c Concealed) String() string { return enum.Name(c, concealedNames) }

// MarshalText implements encoding.TextMarshaler.
func (c Concealed) MarshalText() ([]byte, error) { return enum.Text("concealed", c, concealedNames) }

// UnmarshalText implements encoding.TextUnmarshaler: infer or drop.
func (c *Concealed) UnmarshalText(b []byte) (err error) {
	*c, err = enum.Parse[Concealed]("concealed", concealedNames, b)
	return err
}
