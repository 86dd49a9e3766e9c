package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/internal/defs"
)

// listOnly is a defs.Evidence with no events that records the last list query.
type listOnly struct{ q *defs.EvidenceQuery }

func (l listOnly) EvidenceList(q defs.EvidenceQuery) ([]defs.EvidenceItem, string, error) {
	*l.q = q
	return nil, "", nil
}
func (listOnly) EvidenceItem(string) (defs.EvidenceItem, error) {
	return defs.EvidenceItem{}, defs.ErrEvidenceNotFound
}
func (listOnly) EvidenceFile(string, defs.EvidenceFileKind) (*os.File, error) {
	return nil, defs.ErrEvidenceNotFound
}

// TestEvidenceListParams: since or until beyond years 0000..9999 (Unix seconds that overflow
// time.Unix) and the zero event id as cursor are 400s naming the parameter; until is passed on.
func TestEvidenceListParams(t *testing.T) {
	var got defs.EvidenceQuery
	e := startWith(t, "", nil, func(s *api.Server) { s.Evidence = listOnly{&got} })
	cases := []struct {
		query string
		code  int
		param string
	}{
		{"since=1700000000", 200, ""},
		{"since=253402300799", 200, ""},
		{"since=2026-03-01T12:00:00Z", 200, ""},
		{"since=253402300800", 400, "since"},
		{"since=9223372036854775807", 400, "since"},
		{"since=-9223372036854775808", 400, "since"},
		{"until=2026-03-01T12:00:00.5Z", 200, ""},
		{"since=1700000000&until=1700000060", 200, ""},
		{"until=253402300800", 400, "until"},
		{"until=yesterday", 400, "until"},
		{"cursor=01ARZ3NDEKTSV4RRFFQ69G5FAV", 200, ""},
		{"cursor=00000000000000000000000000", 400, "cursor"},
	}
	for _, c := range cases {
		var er struct{ Error string }
		e.want("GET", "/api/evidence?"+c.query, "", c.code, &er)
		if c.code == 400 && !strings.Contains(er.Error, c.param) {
			t.Errorf("%s: error %q does not name %s", c.query, er.Error, c.param)
		}
		if c.code == 200 && (got.Since.Year() > 9999 || got.Until.Year() > 9999) {
			t.Errorf("%s: since %v, until %v", c.query, got.Since, got.Until)
		}
		if c.code == 200 && strings.Contains(c.query, "until=") && got.Until.IsZero() {
			t.Errorf("%s: until not passed on", c.query)
		}
	}
}
