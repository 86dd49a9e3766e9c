package accept

import (
	"errors"
	"net"
	"testing"
)

// flaky fails its first Accept calls with a temporary error, then returns conns.
type flaky struct {
	net.Listener
	fails int
}

var errFlaky = errors.New("too many open files")

func (f *flaky) Accept() (net.Conn, error) {
	if f.fails > 0 {
		f.fails--
		return nil, errFlaky
	}
	return f.Listener.Accept()
}

func TestRetryPastErrorsThenClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen []error
	got, err := Retry(&flaky{Listener: ln, fails: 3}, nil, func(err error) { seen = append(seen, err) })
	if err != nil {
		t.Fatal(err)
	}
	got.Close()
	if len(seen) != 3 || !errors.Is(seen[0], errFlaky) {
		t.Errorf("onErr saw %v, want 3 × %v", seen, errFlaky)
	}
	done := make(chan struct{})
	close(done)
	if _, err := Retry(&flaky{Listener: ln, fails: 1}, done, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("done during a pause: %v, want net.ErrClosed", err)
	}
	ln.Close()
	if _, err := Retry(ln, nil, nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed listener: %v, want net.ErrClosed", err)
	}
}
