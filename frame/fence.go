package frame

// Fence marks the point of a GPU stream after which a device frame's picture is complete: the
// decoder records it when it emits the frame, and a consumer on another stream queues a wait
// on it before reading DevicePlanes, without a host wait. Package cuda's *Event is one; Handle
// is its CUevent.
type Fence interface {
	Handle() uintptr
}
