package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/config"
)

// TestRacingAdds: adds of the same id at the same time sometimes got 422 "pipeline: stream
// already exists" instead of 409: both passed the API's and the app's checks while the source
// opened, and the pipeline's refusal was not recognised. Exactly one add must win, every other
// one get 409.
func TestRacingAdds(t *testing.T) {
	e := start(t, "")
	video := asset(t, "videos/car-detection.mp4")
	body := fmt.Sprintf(`{"id":"dup","source":%q,"loop":true}`, video)
	const racers = 6 // below sources.max_opening (8): none is refused as busy
	for round := range 5 {
		bodies := make([]string, racers)
		for i := range bodies {
			bodies[i] = body
		}
		answers := postAtOnce(e.url+"/api/streams", bodies)
		created := 0
		for _, a := range answers {
			switch {
			case a.err != nil:
				t.Fatalf("round %d: %v", round, a.err)
			case a.code == http.StatusCreated:
				created++
			case a.code != http.StatusConflict || !strings.Contains(a.body, "already exists"):
				t.Errorf("round %d: %d %s, want 201 or 409", round, a.code, a.body)
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d adds succeeded, want 1", round, created)
		}
		e.want("DELETE", "/api/streams/dup", "", 204, nil)
	}
}

// TestConcurrentAddsLimit: twelve adds at once with sources.max_streams 4 started 9 streams
// (issue 25, item 5): each passed the count before any of the others ran. Exactly max_streams
// must be admitted, every other add refused with 503, Retry-After and the limit named; after a
// delete, one more add fits.
func TestConcurrentAddsLimit(t *testing.T) {
	const limit, adds = 4, 12
	e := startWith(t, "", func(c *config.Config) {
		c.Sources.MaxStreams, c.Sources.MaxOpening = limit, adds // no add is refused as busy
	}, nil)
	video := asset(t, "videos/car-detection.mp4")
	bodies := make([]string, adds)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"id":"c%d","source":%q,"loop":true}`, i, video)
	}
	answers := postAtOnce(e.url+"/api/streams", bodies)
	var created []int
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatal(a.err)
		case a.code == http.StatusCreated:
			created = append(created, i)
		case a.code != http.StatusServiceUnavailable || a.retry == "" || !strings.Contains(a.body, "max_streams"):
			t.Errorf("c%d: %d (Retry-After %q) %s, want 201 or 503 naming max_streams", i, a.code, a.retry, a.body)
		}
	}
	var list struct{ Streams []struct{ ID string } }
	e.want("GET", "/api/streams", "", 200, &list)
	if len(created) != limit || len(list.Streams) != limit {
		t.Fatalf("%d adds answered 201 and %d streams run, want %d of %d", len(created), len(list.Streams), limit, adds)
	}
	e.want("DELETE", fmt.Sprintf("/api/streams/c%d", created[0]), "", 204, nil)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"after","source":%q,"loop":true}`, video), 201, nil)
	resp, b := e.do("POST", "/api/streams", fmt.Sprintf(`{"id":"over","source":%q}`, video))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("add beyond the limit after a delete and an add: %s %s", resp.Status, b)
	}
}

// answer is one response of postAtOnce (err: the request failed).
type answer struct {
	code  int
	retry string // Retry-After
	body  string
	err   error
}

// postAtOnce POSTs each JSON body to url, all released at the same moment, and returns the
// answers in the bodies' order.
func postAtOnce(url string, bodies []string) []answer {
	answers := make([]answer, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers[i] = answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After"), body: string(b)}
		}()
	}
	close(start)
	wg.Wait()
	return answers
}
