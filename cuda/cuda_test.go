package cuda

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// device opens GPU 0 or skips the test when this machine has no usable CUDA driver or device.
func device(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestArgsLayout(t *testing.T) {
	var a Args
	a.I32(1).Ptr(0x1122334455667788).F32(1.5).F64(2.5).U32(7)
	// int at 0, pointer aligned to 8, float at 16, double aligned to 24, uint at 32.
	if a.Len() != 36 {
		t.Fatalf("len %d, want 36", a.Len())
	}
	if got := *(*uint64)(unsafe.Pointer(&a.buf[8])); got != 0x1122334455667788 {
		t.Errorf("pointer %#x", got)
	}
	if got := math.Float32frombits(*(*uint32)(unsafe.Pointer(&a.buf[16]))); got != 1.5 {
		t.Errorf("float %v", got)
	}
	if got := math.Float64frombits(*(*uint64)(unsafe.Pointer(&a.buf[24]))); got != 2.5 {
		t.Errorf("double %v", got)
	}
	a.Reset()
	for range 40 {
		a.Ptr(1)
	}
	if a.Err() == nil {
		t.Error("overflow not reported")
	}
	if allocs := testing.AllocsPerRun(100, func() { a.Reset().Ptr(1).I32(2).F32(3) }); allocs != 0 {
		t.Errorf("%v allocations per packing", allocs)
	}
}

func TestGridFor(t *testing.T) {
	g := GridFor(416, 416, Dim3{32, 8, 1})
	if g != (Dim3{13, 52, 1}) {
		t.Errorf("grid %+v", g)
	}
	if g := GridFor(33, 1, Dim3{32, 8, 1}); g != (Dim3{2, 1, 1}) {
		t.Errorf("grid %+v", g)
	}
}

// TestNoDriver checks the CPU fallback signal on machines without the driver.
func TestNoDriver(t *testing.T) {
	err := Init()
	if err == nil {
		t.Skip("driver present")
	}
	if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Init without a driver: %v, want ErrNoDriver or ErrNoDevice", err)
	}
	if Available() {
		t.Error("Available() true without a driver")
	}
}

// TestPrimaryContextOnce opens the device from many goroutines at once: one retain, one handle.
func TestPrimaryContextOnce(t *testing.T) {
	d := device(t)
	before := ReadStats().ContextsRetain
	var wg sync.WaitGroup
	handles := make([]*Device, 16)
	for i := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := Open(0)
			if err != nil {
				t.Error(err)
				return
			}
			handles[i] = h
		}()
	}
	wg.Wait()
	for _, h := range handles {
		if h != d {
			t.Fatal("Open returned different handles for one device")
		}
		h.Close()
	}
	if n := ReadStats().ContextsRetain - before; n != 0 {
		t.Errorf("%d more primary-context retains", n)
	}
	t.Log(d)
}

// TestCopiesAndPool round-trips data through pool memory and checks the copy counters.
func TestCopiesAndPool(t *testing.T) {
	d := device(t)
	pool, err := d.NewMemPool(^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Destroy()
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const n = 1 << 20
	h, err := d.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	for i := range h.Bytes {
		h.Bytes[i] = byte(i * 7)
	}
	err = d.RunLocked(func() error {
		before := ReadStats()
		b, err := pool.Alloc(n, s)
		if err != nil {
			return err
		}
		c, err := pool.Alloc(n, s)
		if err != nil {
			return err
		}
		if err := s.CopyHtoD(b.Ptr, h, n); err != nil {
			return err
		}
		if err := s.CopyDtoD(c.Ptr, b.Ptr, n); err != nil {
			return err
		}
		clear(h.Bytes)
		if err := s.CopyDtoH(h, c.Ptr, n); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		for i := range h.Bytes {
			if h.Bytes[i] != byte(i*7) {
				t.Fatalf("byte %d: %d", i, h.Bytes[i])
			}
		}
		st := ReadStats().Sub(before)
		if st.HtoD != 1 || st.DtoH != 1 || st.DtoD != 1 || st.HtoDBytes != n || st.DtoHBytes != n {
			t.Errorf("counters %+v", st)
		}
		b.Free(s)
		c.Free(s)
		// Steady state: allocations are served from the pool's cache.
		u0, _ := pool.Usage()
		for range 100 {
			b, err := pool.Alloc(n, s)
			if err != nil {
				return err
			}
			b.Free(s)
		}
		s.Synchronize()
		u1, _ := pool.Usage()
		if u1.Reserved != u0.Reserved || u1.Used != 0 {
			t.Errorf("pool grew: %+v -> %+v", u0, u1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEvents times an empty interval.
func TestEvents(t *testing.T) {
	d := device(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	a, _ := d.NewEvent(true)
	b, _ := d.NewEvent(true)
	defer a.Destroy()
	defer b.Destroy()
	err = d.RunLocked(func() error {
		buf, err := d.Alloc(64 << 20)
		if err != nil {
			return err
		}
		defer buf.Free(nil)
		a.Record(s)
		s.Fill32(buf.Ptr, 0x7fc00000, 16<<20)
		b.Record(s)
		if err := b.Synchronize(); err != nil {
			return err
		}
		ms, err := Elapsed(a, b)
		t.Logf("64 MiB memset: %.3f ms", ms)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBadModule(t *testing.T) {
	d := device(t)
	if _, err := d.LoadModule(nil); err == nil {
		t.Error("empty module accepted")
	}
	_, err := d.LoadModule([]byte("not ptx"))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("garbage PTX: %v, want *Error", err)
	}
	runtime.KeepAlive(d)
}
