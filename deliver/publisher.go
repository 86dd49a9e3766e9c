package deliver

import (
	"context"
	"errors"

	"github.com/vinfer/vinfer/outbox"
)

// Publisher sends records to one sink.
//
// Publish sends recs in order and returns how many of them, from the first, the sink has
// acknowledged; it returns len(recs) and a nil error when all were. On an error the records
// from index n on are retried in a later call (all-or-nothing publishers return 0), so a
// record may reach the sink twice when it was delivered but not reported; consumers drop
// duplicates by event id. An error wrapping ErrUndeliverable says that recs[n] itself can
// never be delivered (rejected as malformed or too large): it is skipped and counted instead
// of retried. Publish must return when ctx is done. A Publisher is called from one goroutine.
type Publisher interface {
	Publish(ctx context.Context, recs []outbox.Record) (int, error)
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, recs []outbox.Record) (int, error)

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	return f(ctx, recs)
}

// ErrUndeliverable marks, through errors.Is, a Publish error about a record no retry can
// deliver.
var ErrUndeliverable = errors.New("deliver: undeliverable record")
