package config

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Output selects where results go.
type Output struct {
	// JSONL is shorthand for a jsonl sink: a file path, "-" for stdout (the default), "none".
	JSONL string `yaml:"jsonl,omitempty" json:"jsonl,omitempty"`
	// Events is shorthand for a jsonl sink of scene events, one per line: a file, "-" for stdout;
	// empty: none.
	Events string `yaml:"events,omitempty" json:"events,omitempty"`
	// DataDir is where sinks keep their state (outboxes), relative to the config file; default
	// vinfer-data.
	DataDir string `yaml:"data_dir,omitempty" json:"data_dir,omitempty"`
	// Sinks are further outputs, each of a kind registered in package sink.
	Sinks []Sink `yaml:"sinks,omitempty" json:"sinks,omitempty"`
	// Progress prints a live progress line on stderr (default true when stderr is a terminal).
	Progress *bool `yaml:"progress,omitempty" json:"progress,omitempty"`
	// HTTP is the API server address (e.g. 127.0.0.1:8080); "none" disables it.
	HTTP string `yaml:"http,omitempty" json:"http,omitempty"`
	// Token, when set, is the bearer token the API requires.
	Token string `yaml:"token,omitempty" json:"-"`
	// Tokens are further credentials, each with a label, a scope and limits (config/tokens.go).
	Tokens []Token `yaml:"tokens,omitempty" json:"tokens,omitempty"`
	// Insecure allows serving beyond loopback without a token (refused otherwise).
	Insecure bool `yaml:"insecure,omitempty" json:"insecure,omitempty"`
	// AllowedHosts are further Host header names the API answers to, besides the listen
	// address, localhost and the loopback addresses (DNS rebinding defence).
	AllowedHosts []string `yaml:"allowed_hosts,omitempty" json:"allowed_hosts,omitempty"`
	// AllowedOrigins are further browser origins (scheme://host[:port]) that may change state
	// or open a WebSocket, besides the API's own.
	AllowedOrigins []string `yaml:"allowed_origins,omitempty" json:"allowed_origins,omitempty"`
	// TLSCert and TLSKey, both set, serve HTTPS with this certificate and key (PEM files).
	TLSCert string `yaml:"tls_cert,omitempty" json:"tls_cert,omitempty"`
	TLSKey  string `yaml:"tls_key,omitempty" json:"-"`
	// RTSP serves the streams' video with ONVIF metadata (config/rtspout.go); nil: off.
	RTSP *RTSPOut `yaml:"rtsp,omitempty" json:"rtsp,omitempty"`
}

// ErrTLSPair is returned when only one of tls_cert and tls_key is set.
var ErrTLSPair = errors.New("output: tls_cert and tls_key go together")

// Validate checks the HTTP settings.
func (o *Output) Validate() error {
	for i := range o.Sinks {
		o.Sinks[i].where = fmt.Sprintf("output.sinks[%d]", i)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return ErrTLSPair
	}
	if err := o.validateRTSP(); err != nil {
		return err
	}
	if err := o.checkSecrets(); err != nil {
		return err
	}
	return ValidateTokens(o.Tokens, o.Token)
}

// ErrSinkType is wrapped when a sink declaration has no type.
var ErrSinkType = errors.New("sink: type is required")

// Sink declares one output: its type selects the kind (package sink's registry), which decodes
// the other fields itself with Decode.
type Sink struct {
	Type   string
	params map[string]any
	// fields are the declaration's entries in the configuration file, for errors that name the
	// file's line and the field; where is its path (output.sinks[i]). Both empty from JSON and
	// NewSink.
	fields []*ast.MappingValueNode
	where  string
}

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (s *Sink) UnmarshalYAML(node ast.Node) error {
	var m map[string]any
	if err := yaml.NodeToValue(node, &m); err != nil {
		return err
	}
	switch n := node.(type) {
	case *ast.MappingNode:
		s.fields = n.Values
	case *ast.MappingValueNode:
		s.fields = []*ast.MappingValueNode{n}
	}
	return s.set(m)
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Sink) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	return s.set(m)
}

// MarshalYAML implements yaml.InterfaceMarshaler.
func (s Sink) MarshalYAML() (any, error) { return s.settings(), nil }

// MarshalJSON implements json.Marshaler.
func (s Sink) MarshalJSON() ([]byte, error) { return json.Marshal(s.settings()) }

func (s *Sink) set(m map[string]any) error {
	t, ok := m["type"].(string)
	if !ok || t == "" {
		return ErrSinkType
	}
	delete(m, "type")
	s.Type, s.params = t, m
	return nil
}

func (s Sink) settings() map[string]any {
	m := map[string]any{"type": s.Type}
	for k, v := range s.params {
		m[k] = v
	}
	return m
}

// Decode decodes the sink's fields other than type into v (a pointer to the kind's settings
// struct with yaml tags), strictly: an unknown field is an error naming it. From a
// configuration file, an error names the field's path and the file's line and column, e.g.
// "sink mqtt: output.sinks[0].outbox (line 12, column 13): string was used where mapping is
// expected".
func (s Sink) Decode(v any) error {
	if len(s.params) == 0 {
		return nil
	}
	if len(s.fields) > 0 {
		return s.decodeNode(v)
	}
	b, err := yaml.Marshal(s.params)
	if err != nil {
		return fmt.Errorf("sink %s: %w", s.Type, err)
	}
	if err := yaml.UnmarshalWithOptions(b, v, yaml.Strict()); err != nil {
		return fmt.Errorf("sink %s: %s", s.Type, yaml.FormatError(err, false, false))
	}
	return nil
}

// decodeNode decodes the file's own entries, less type, so errors carry the file's positions.
func (s Sink) decodeNode(v any) error {
	var kept []*ast.MappingValueNode
	for _, f := range s.fields {
		if f.Key == nil || f.Key.GetToken().Value != "type" {
			kept = append(kept, f)
		}
	}
	err := yaml.NodeToValue(ast.Mapping(kept[0].GetToken(), false, kept...), v, yaml.Strict())
	if err == nil {
		return nil
	}
	if field, at, lerr, ok := s.leafError(kept, v); ok && at != nil {
		return fmt.Errorf("sink %s: %s (line %d, column %d): %w", s.Type, s.path(field), at.Line, at.Column, lerr)
	}
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return fmt.Errorf("sink %s: %s: %w", s.Type, s.path(""), err)
	}
	at := ye.GetToken().Position
	field := ""
	for _, f := range kept { // the last entry starting at or before the error
		if p := f.Key.GetToken().Position; p.Line < at.Line || p.Line == at.Line && p.Column <= at.Column {
			field = f.Key.GetToken().Value
		}
	}
	return fmt.Errorf("sink %s: %s (line %d, column %d): %s", s.Type, s.path(field), at.Line, at.Column, ye.GetMessage())
}

// path is the declaration's path in the configuration, with field appended when not empty.
func (s Sink) path(field string) string {
	p := s.where
	if p == "" {
		p = "sink"
	}
	if field != "" {
		p += "." + field
	}
	return p
}

// NewSink returns the declaration of a sink of type typ with the given settings.
func NewSink(typ string, settings map[string]any) Sink {
	return Sink{Type: typ, params: settings}
}
