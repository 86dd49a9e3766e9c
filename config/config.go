// Package config reads vinfer's YAML configuration: the models to load, the streams to run and
// the outputs. Enumerations are typed and decoded from their words, so a value that decoded is
// valid; unknown fields are errors (a typo must not silently fall back to a default). Paths
// inside a file are relative to that file's directory.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// Config is a whole `vinfer run` configuration.
type Config struct {
	Models  []Model  `yaml:"models" json:"models"`
	Streams []Stream `yaml:"streams" json:"streams"`
	Output  Output   `yaml:"output" json:"output"`
	// Sources limits what streams may open (allowed directories, timeouts, counts).
	Sources Sources `yaml:"sources,omitempty" json:"sources,omitempty"`
	// Evidence records clips and snapshots of scene events (config/evidence.go); nil: off.
	Evidence *Evidence `yaml:"evidence,omitempty" json:"evidence,omitempty"`
	// Record keeps the video and per-frame results of streams with record: true
	// (config/record.go); nil: off.
	Record *Record `yaml:"record,omitempty" json:"record,omitempty"`
	// GB28181 makes vinfer a GB28181 platform (SIP server); nil: none.
	GB28181 *GB28181 `yaml:"gb28181,omitempty" json:"gb28181,omitempty"`
	// Cluster makes this process a node of a cluster over NATS JetStream (config/cluster.go);
	// nil: standalone.
	Cluster *Cluster `yaml:"cluster,omitempty" json:"cluster,omitempty"`
	// Activity holds the defaults of every stream's activity settings (config/activity.go);
	// a stream's own activity: overrides them field by field.
	Activity *Activity `yaml:"activity,omitempty" json:"activity,omitempty"`
	// Live holds the live view's settings (config/live.go): viewers per stream, ICE.
	Live Live `yaml:"live,omitempty" json:"live,omitempty"`
	// Dir is the directory relative paths are resolved against (the config file's directory).
	Dir string `yaml:"-" json:"-"`
}

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	abs, _ := filepath.Abs(path)
	c.Dir = filepath.Dir(abs)
	c.resolvePaths()
	return c, nil
}

// Parse decodes and validates YAML. Relative paths stay as written (Load resolves them).
func Parse(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.Strict()); err != nil {
		return nil, errors.New(yaml.FormatError(err, false, true))
	}
	if err := c.Output.checkSecretLines(b); err != nil { // config/secretlen.go
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks names, references and ranges; each error names the field to fix.
func (c *Config) Validate() error {
	var errs []error
	models := map[string]bool{}
	for i := range c.Models {
		m := &c.Models[i]
		where := fmt.Sprintf("models[%d]", i)
		if m.Name != "" && models[m.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate model name %q", where, m.Name))
		}
		models[m.Name] = true
		errs = append(errs, m.Validate(where))
	}
	for i, m := range c.Models {
		for k, cc := range m.Cascade {
			if !models[cc.Model] || cc.Model == m.Name {
				errs = append(errs, fmt.Errorf("models[%d].cascade[%d]: model %q must be another declared model", i, k, cc.Model))
			}
			errs = append(errs, cc.Validate(fmt.Sprintf("models[%d].cascade[%d]", i, k)))
		}
	}
	errs = append(errs, c.Sources.Validate(), c.Output.Validate(), c.Live.Validate())
	if c.Evidence != nil {
		errs = append(errs, c.Evidence.Validate())
	}
	if c.Record != nil {
		errs = append(errs, c.Record.Validate())
	}
	if c.GB28181 != nil {
		errs = append(errs, c.GB28181.Init())
	}
	if c.Cluster != nil {
		errs = append(errs, c.Cluster.Validate())
	}
	if c.Activity != nil {
		errs = append(errs, c.Activity.Validate())
	}
	ids := map[string]bool{}
	for i := range c.Streams {
		s := &c.Streams[i]
		where := fmt.Sprintf("streams[%d] (%s)", i, s.ID)
		if ids[s.ID] {
			errs = append(errs, fmt.Errorf("%s: duplicate stream id %q", where, s.ID))
		}
		ids[s.ID] = true
		if err := c.CheckStream(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return errors.Join(errs...)
}

// CheckStream validates a stream's fields and its model reference against this configuration's
// models: what a stream needs before it may be added, from a file or through the API.
func (c *Config) CheckStream(s *Stream) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := c.checkRecord(s); err != nil {
		return err
	}
	m := c.Model(s.Model)
	if m == nil {
		return fmt.Errorf("model %q %w (have: %s)", s.Model, ErrUnknownModel, strings.Join(c.ModelNames(), ", "))
	}
	errs := []error{s.CheckModel(m)}
	if s.OnGPU() { // its cascades run on the same GPU, on crops of its frames
		for _, cc := range m.Cascade {
			if cm := c.Model(cc.Model); cm != nil && cm.Provider != ProviderCUDA {
				errs = append(errs, fmt.Errorf("decoder nvdec: model %q cascades to %q, which needs provider: cuda to crop GPU frames; or use decoder: cpu", m.Name, cm.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// Model returns the declared model named name, or nil.
func (c *Config) Model(name string) *Model {
	for i := range c.Models {
		if c.Models[i].Name == name {
			return &c.Models[i]
		}
	}
	return nil
}

// ModelNames lists the declared models, sorted.
func (c *Config) ModelNames() []string {
	out := make([]string, 0, len(c.Models))
	for _, m := range c.Models {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

func (c *Config) resolvePaths() {
	for i := range c.Models {
		m := &c.Models[i]
		m.Path = c.Resolve(m.Path)
		if m.Labels != "" && m.Labels != "coco80" {
			m.Labels = c.Resolve(m.Labels)
		}
	}
	for i := range c.Streams {
		s := &c.Streams[i]
		if !strings.Contains(s.Source, "://") {
			s.Source = c.Resolve(s.Source)
		}
	}
	if c.Evidence != nil {
		c.Evidence.Dir = c.Resolve(c.Evidence.Dir)
	}
	if c.Record != nil {
		c.Record.Dir = c.Resolve(c.Record.Dir)
	}
	c.Output.TLSCert, c.Output.TLSKey = c.Resolve(c.Output.TLSCert), c.Resolve(c.Output.TLSKey)
	for _, o := range []*string{&c.Output.JSONL, &c.Output.Events} {
		if *o != "" && *o != "-" && *o != "none" {
			*o = c.Resolve(*o)
		}
	}
}

// Resolve makes a path relative to the config file's directory absolute.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Dir == "" {
		return p
	}
	return filepath.Join(c.Dir, p)
}

// LoadModel reads a single model declaration (the MODEL.yaml beside an .onnx file). Paths are
// relative to that file.
func LoadModel(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	var m Model
	if err := yaml.UnmarshalWithOptions(b, &m, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("model config %s: %s", path, yaml.FormatError(err, false, true))
	}
	if m.Name == "" { // the file's own name when the declaration has none
		m.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if m.Path == "" {
		m.Path = strings.TrimSuffix(path, filepath.Ext(path)) + ".onnx"
	}
	if err := m.Validate("model"); err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	c := Config{Dir: filepath.Dir(path), Models: []Model{m}}
	if abs, err := filepath.Abs(path); err == nil {
		c.Dir = filepath.Dir(abs)
	}
	c.resolvePaths()
	return &c.Models[0], nil
}
