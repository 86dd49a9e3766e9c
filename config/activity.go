package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/internal/enum"
	"github.com/vinfer/vinfer/motion"
)

// ActivityMode is how a stream's cost follows its scene (docs/activity.md).
type ActivityMode uint8

// Activity modes.
const (
	// ActivityUnset takes the top-level activity section's mode (off without one).
	ActivityUnset ActivityMode = iota
	// ActivityOff decodes and infers every frame (the default).
	ActivityOff
	// ActivityGate decodes every frame but infers one only when it moves, while a tracked
	// object lives, or at each refresh.
	ActivityGate
	// ActivityIdle is ActivityGate plus key-frame-only decoding after idle_after without
	// motion or objects; activity wakes the stream and the access units since the last key
	// frame are decoded in a burst.
	ActivityIdle
)

var activityModeNames = []string{"", "off", "gate", "idle"}

func (m ActivityMode) String() string { return enum.Name(m, activityModeNames) }

// MarshalText implements encoding.TextMarshaler.
func (m ActivityMode) MarshalText() ([]byte, error) {
	return enum.Text("activity.mode", m, activityModeNames)
}

// UnmarshalText implements encoding.TextUnmarshaler: off, gate or idle.
func (m *ActivityMode) UnmarshalText(b []byte) (err error) {
	*m, err = enum.Parse[ActivityMode]("activity.mode", activityModeNames, b)
	return err
}

// Activity defaults and bounds.
const (
	DefaultRefresh     = 5 * time.Second
	DefaultIdleAfter   = 10 * time.Second
	DefaultMaxGOP      = 4 * time.Second
	DefaultGOPBytes    = 8 << 20
	MaxGOPBytes        = 256 << 20
	DefaultMinFraction = 0.002
)

// Activity configures a stream's motion gating and idle decoding (docs/activity.md). The
// top-level `activity:` section holds defaults for every stream; a stream's own section
// overrides them field by field. Zero fields take the defaults.
type Activity struct {
	// Mode is off (default), gate or idle; unset takes the top-level section's.
	Mode ActivityMode `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Refresh is the longest time between inferred frames of a still scene (default 5s).
	Refresh Duration `yaml:"refresh,omitempty" json:"refresh,omitempty"`
	// IdleAfter is how long without motion and without tracked objects puts a stream in
	// idle decoding (mode: idle; default 10s).
	IdleAfter Duration `yaml:"idle_after,omitempty" json:"idle_after,omitempty"`
	// MaxGOP is the longest key-frame interval idle decoding accepts (default 4s): a stream
	// with longer GOPs stays gated (waking would replay too much).
	MaxGOP Duration `yaml:"max_gop,omitempty" json:"max_gop,omitempty"`
	// GOPBytes bounds the access units held since the last key frame for a wake's burst
	// (default 8 MiB, at most 256 MiB); a longer burst is cut (counted).
	GOPBytes int `yaml:"gop_bytes,omitempty" json:"gop_bytes,omitempty"`
	// MinFraction is the least share of the (unmasked) picture that must move (default 0.002).
	MinFraction float64 `yaml:"min_fraction,omitempty" json:"min_fraction,omitempty"`
	// Threshold is a moving pixel's least luma difference, 1…255 (default 20).
	Threshold int `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	// Width is the width of the plane motion is found on, 16…1024 px (default 160).
	Width int `yaml:"width,omitempty" json:"width,omitempty"`
	// Lighting is the share of the picture above which a change is lighting, not motion
	// (0…1, default 0.6).
	Lighting float64 `yaml:"lighting,omitempty" json:"lighting,omitempty"`
	// Mask lists polygons, in frame pixels, where motion is ignored (a clock, trees).
	Mask [][]analytics.Point `yaml:"mask,omitempty" json:"mask,omitempty"`
	// Crop is "motion" to run the detector on the crop around the motion regions and the live
	// tracks instead of the whole frame (the full frame when that crop is large); "" or "off":
	// the whole frame.
	Crop string `yaml:"crop,omitempty" json:"crop,omitempty"`
}

// CropMotion is Activity.Crop's value for crop-only inference.
const CropMotion = "motion"

// Enabled reports whether the stream gates (a nil Activity is off).
func (a *Activity) Enabled() bool {
	return a != nil && (a.Mode == ActivityGate || a.Mode == ActivityIdle)
}

// Over returns a with def's values in its zero fields (a nil a: def; both nil: nil).
func (a *Activity) Over(def *Activity) *Activity {
	if def == nil {
		return a
	}
	if a == nil {
		c := *def
		return &c
	}
	c := *a
	c.Mode = cmp.Or(c.Mode, def.Mode)
	c.Refresh = cmp.Or(c.Refresh, def.Refresh)
	c.IdleAfter = cmp.Or(c.IdleAfter, def.IdleAfter)
	c.MaxGOP = cmp.Or(c.MaxGOP, def.MaxGOP)
	c.GOPBytes = cmp.Or(c.GOPBytes, def.GOPBytes)
	c.MinFraction = cmp.Or(c.MinFraction, def.MinFraction)
	c.Threshold = cmp.Or(c.Threshold, def.Threshold)
	c.Width = cmp.Or(c.Width, def.Width)
	c.Lighting = cmp.Or(c.Lighting, def.Lighting)
	if c.Mask == nil {
		c.Mask = def.Mask
	}
	c.Crop = cmp.Or(c.Crop, def.Crop)
	return &c
}

// Durations returns refresh, idle_after and max_gop with their defaults.
func (a *Activity) Durations() (refresh, idleAfter, maxGOP time.Duration) {
	return cmp.Or(time.Duration(a.Refresh), DefaultRefresh),
		cmp.Or(time.Duration(a.IdleAfter), DefaultIdleAfter),
		cmp.Or(time.Duration(a.MaxGOP), DefaultMaxGOP)
}

// Motion returns the motion detector's configuration.
func (a *Activity) Motion() motion.Config {
	c := motion.Config{Width: a.Width, Threshold: a.Threshold, Lighting: a.Lighting}
	for _, p := range a.Mask {
		poly := make(motion.Polygon, len(p))
		for i, v := range p {
			poly[i] = v
		}
		c.Mask = append(c.Mask, poly)
	}
	return c
}

// Validate checks the fields; each error names its field (activity.<field>).
func (a *Activity) Validate() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, d := range []struct {
		name string
		v    Duration
		min  time.Duration
	}{{"refresh", a.Refresh, 100 * time.Millisecond}, {"idle_after", a.IdleAfter, time.Second}, {"max_gop", a.MaxGOP, 100 * time.Millisecond}} {
		if d.v != 0 && (time.Duration(d.v) < d.min || time.Duration(d.v) > time.Hour) {
			errs = append(errs, fmt.Errorf("activity.%s %v must be between %v and 1h", d.name, time.Duration(d.v), d.min))
		}
	}
	if a.Crop != "" && a.Crop != "off" && a.Crop != CropMotion {
		errs = append(errs, fmt.Errorf("activity.crop %.32q must be motion or off", a.Crop))
	}
	if a.GOPBytes != 0 && (a.GOPBytes < 64<<10 || a.GOPBytes > MaxGOPBytes) {
		errs = append(errs, fmt.Errorf("activity.gop_bytes %d must be between 65536 and %d", a.GOPBytes, MaxGOPBytes))
	}
	if !(a.MinFraction >= 0 && a.MinFraction <= 1) {
		errs = append(errs, fmt.Errorf("activity.min_fraction %v must be between 0 and 1", a.MinFraction))
	}
	if a.Threshold != 0 && (a.Threshold < 1 || a.Threshold > 255) {
		errs = append(errs, fmt.Errorf("activity.threshold %d must be between 1 and 255", a.Threshold))
	}
	if a.Width != 0 && (a.Width < 16 || a.Width > 1024) {
		errs = append(errs, fmt.Errorf("activity.width %d must be between 16 and 1024", a.Width))
	}
	if !(a.Lighting >= 0 && a.Lighting <= 1) {
		errs = append(errs, fmt.Errorf("activity.lighting %v must be between 0 and 1", a.Lighting))
	}
	for i, p := range a.Mask {
		if len(p) < 3 {
			errs = append(errs, fmt.Errorf("activity.mask[%d] has %d points, a polygon needs at least 3", i, len(p)))
		}
		for _, v := range p {
			if !(v[0] >= 0 && v[1] >= 0 && v[0] <= 1e5 && v[1] <= 1e5) {
				errs = append(errs, fmt.Errorf("activity.mask[%d] point %v must be in frame pixels (0…100000)", i, v))
				break
			}
		}
	}
	if len(a.Mask) > 64 {
		errs = append(errs, fmt.Errorf("activity.mask has %d polygons, at most 64", len(a.Mask)))
	}
	return errors.Join(errs...)
}

// NVDECIdleEnv is the environment variable that lets nvdec streams use mode idle
// (value "experimental"): the first GPU run of that mode found its shared key-frame probes
// stalling, so no idle stream woke (docs/benchmarks-activity.md). The probes' cost is fixed
// since (282 → 1.5 ms per probe on an H100, measured alone: scripts/gpu/check-probe30.sh); a
// whole run with the fix is still to come.
const NVDECIdleEnv = "VINFER_NVDEC_IDLE"

// checkActivity checks the stream's activity settings against its decoder: every decoder can
// be gated (an nvdec stream's motion check reads sampled luma rows of its frames in GPU
// memory: docs/activity.md); mode idle on nvdec is refused unless NVDECIdleEnv asks for it.
func (s *Stream) checkActivity() error {
	if s.Activity != nil && s.Activity.Mode == ActivityIdle && s.OnGPU() && os.Getenv(NVDECIdleEnv) != "experimental" {
		return errors.New("activity.mode: idle is not yet validated with decoder nvdec (its key-frame probes stalled in the first GPU run; their fix awaits a whole run: docs/benchmarks-activity.md); use mode gate, or decoder cpu")
	}
	return nil
}
