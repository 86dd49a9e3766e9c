package defs

import "errors"

// Errors of StreamControl, for observers to map to their answers (the API's status codes).
var (
	// ErrBusy: too many sources are being opened at once; retry shortly.
	ErrBusy = errors.New("too many sources are being opened at once: retry shortly")
	// ErrStreamLimit: the configured maximum number of streams runs already.
	ErrStreamLimit = errors.New("the maximum number of streams (sources.max_streams) is running")
	// ErrStreamExists: a stream with that id runs already (another add may have won a race).
	ErrStreamExists = errors.New("stream already exists")
)
