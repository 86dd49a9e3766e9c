package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNoGPU is wrapped by Devices.Pick's error when no CUDA device can be used (no NVIDIA
// driver, or no device visible).
var ErrNoGPU = errors.New("no CUDA device")

// Devices hands out the GPUs that streams decode and infer on (device assignment of
// `vinfer run`: the app's nvdec streams). A stream asks for an explicit
// ordinal or for the next device round-robin over every visible one. Each device is opened
// once, at its first stream (cuda.Open retains its primary context: the start-up cost is paid
// there, never on the frame path), and kept until Close. Safe for concurrent use.
type Devices struct {
	mu     sync.Mutex
	open   map[int]*Device
	next   int // round-robin position
	closed bool
}

// Pick returns the device for a new stream: ordinal want when want ≥ 0, else the next device
// round-robin. Errors: one wrapping ErrNoGPU (and ErrNoDriver or ErrNoDevice) when
// the machine has no usable GPU, one naming the visible range for an ordinal that does not
// exist, or the driver's error when the device cannot be opened.
func (d *Devices) Pick(want int) (*Device, error) {
	n, err := DeviceCount()
	if err == nil && n == 0 {
		err = ErrNoDevice
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoGPU, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("cuda: devices closed")
	}
	ord, err := pick(want, n, &d.next)
	if err != nil {
		return nil, err
	}
	if dev := d.open[ord]; dev != nil {
		return dev, nil
	}
	dev, err := Open(ord)
	if err != nil {
		return nil, fmt.Errorf("opening GPU %d: %w", ord, err)
	}
	if d.open == nil {
		d.open = map[int]*Device{}
	}
	d.open[ord] = dev
	return dev, nil
}

// pick chooses a device ordinal among n visible ones: want when want ≥ 0, else *next, which
// then moves on round-robin.
func pick(want, n int, next *int) (int, error) {
	if want >= 0 {
		if want >= n {
			return 0, fmt.Errorf("gpu %d does not exist: %d CUDA device(s) visible (0…%d; CUDA_VISIBLE_DEVICES renumbers them)", want, n, n-1)
		}
		return want, nil
	}
	ord := *next % n
	*next = (ord + 1) % n
	return ord, nil
}

// Opened returns the devices opened so far, by ordinal.
func (d *Devices) Opened() []*Device {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*Device
	for ord := 0; len(out) < len(d.open); ord++ {
		if dev := d.open[ord]; dev != nil {
			out = append(out, dev)
		}
	}
	return out
}

// Close releases the devices (their primary contexts go with the last user: close the
// decoders and models first). Pick fails afterwards.
func (d *Devices) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for ord, dev := range d.open {
		errs = append(errs, dev.Close())
		delete(d.open, ord)
	}
	return errors.Join(errs...)
}
