package config

import "github.com/vinfer/vinfer/internal/enum"

// Precision is the floating-point precision a model computes in (docs/models.md "Precision").
type Precision uint8

// Precisions.
const (
	// PrecisionFP32 runs the model as exported (the default).
	PrecisionFP32 Precision = iota
	// PrecisionFP16 runs a float16 rewrite of the model (package onnxedit), checked against
	// the float32 model at load; refused (float32 served, the reason logged) when the outputs
	// differ.
	PrecisionFP16
	// PrecisionAuto serves the float16 rewrite only where it passes the check and runs faster
	// than float32, measured at load.
	PrecisionAuto
)

var precisionNames = []string{"fp32", "fp16", "auto"}

func (p Precision) String() string { return enum.Name(p, precisionNames) }

// MarshalText implements encoding.TextMarshaler.
func (p Precision) MarshalText() ([]byte, error) { return enum.Text("precision", p, precisionNames) }

// UnmarshalText implements encoding.TextUnmarshaler: fp32, fp16 or auto (empty: fp32).
func (p *Precision) UnmarshalText(b []byte) (err error) {
	if len(b) == 0 {
		*p = PrecisionFP32
		return nil
	}
	*p, err = enum.Parse[Precision]("precision", precisionNames, b)
	return err
}
