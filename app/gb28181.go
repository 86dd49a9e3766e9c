package app

import (
	"fmt"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
)

func gbSource(s config.Stream, raw string) (interface {
	source.Source
	Init() error
}, error) {
	return nil, fmt.Errorf("stream %s: gb28181 sources are not built in yet", s.ID)
}
