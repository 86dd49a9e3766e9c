package platform

import (
	"errors"
	"sync"
)

// ErrNoPort is returned when every media port of the range is in use.
var ErrNoPort = errors.New("gb28181: every media port of media_ports is in use")

// ports hands out the media ports of a range, round robin, each once until released (a port
// just released is the last to be reused, so late packets of an old session find no one).
type ports struct {
	mu          sync.Mutex
	first, last int
	next        int
	used        map[int]bool
}

func (p *ports) get() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used, p.next = map[int]bool{}, p.first
	}
	for range p.last - p.first + 1 {
		port := p.next
		p.next++
		if p.next > p.last {
			p.next = p.first
		}
		if !p.used[port] {
			p.used[port] = true
			return port, nil
		}
	}
	return 0, ErrNoPort
}

func (p *ports) put(port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, port)
}
