package cuda

import "sync/atomic"

// Stats counts the traffic vinfer moves through this package since the process started. The
// counters are process-wide and cheap (atomics); benchmarks read them before and after a run and
// divide by the frames processed.
type Stats struct {
	HtoD, DtoH, DtoD           uint64 // copies issued
	HtoDBytes, DtoHBytes       uint64 // bytes copied
	Launches                   uint64 // kernels launched
	Rebinds                    uint64 // launches that found another context current and switched
	PoolAllocs, DeviceAllocs   uint64 // cuMemAllocFromPoolAsync and cuMemAlloc calls
	HostAllocs, ContextsRetain uint64 // pinned host allocations; primary-context retains
}

var counters struct {
	htod, dtoh, dtod, htodBytes, dtohBytes atomic.Uint64
	launches                               atomic.Uint64
	rebinds                                uint64 // updated atomically from C (vf_launch)
	poolAllocs, devAllocs, hostAllocs      atomic.Uint64
	retains                                atomic.Uint64
}

// ReadStats returns a snapshot of the counters.
func ReadStats() Stats {
	return Stats{
		HtoD: counters.htod.Load(), DtoH: counters.dtoh.Load(), DtoD: counters.dtod.Load(),
		HtoDBytes: counters.htodBytes.Load(), DtoHBytes: counters.dtohBytes.Load(),
		Launches: counters.launches.Load(), Rebinds: atomic.LoadUint64(&counters.rebinds),
		PoolAllocs: counters.poolAllocs.Load(), DeviceAllocs: counters.devAllocs.Load(),
		HostAllocs: counters.hostAllocs.Load(), ContextsRetain: counters.retains.Load(),
	}
}

// Sub returns the per-field difference s − o (the traffic between two snapshots).
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		HtoD: s.HtoD - o.HtoD, DtoH: s.DtoH - o.DtoH, DtoD: s.DtoD - o.DtoD,
		HtoDBytes: s.HtoDBytes - o.HtoDBytes, DtoHBytes: s.DtoHBytes - o.DtoHBytes,
		Launches: s.Launches - o.Launches, Rebinds: s.Rebinds - o.Rebinds,
		PoolAllocs: s.PoolAllocs - o.PoolAllocs, DeviceAllocs: s.DeviceAllocs - o.DeviceAllocs,
		HostAllocs: s.HostAllocs - o.HostAllocs, ContextsRetain: s.ContextsRetain - o.ContextsRetain,
	}
}
