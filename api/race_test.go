package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
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
		type answer struct {
			code int
			body string
			err  error
		}
		answers := make([]answer, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resp, err := http.Post(e.url+"/api/streams", "application/json", strings.NewReader(body))
				if err != nil {
					answers[i].err = err
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				answers[i] = answer{code: resp.StatusCode, body: string(b)}
			}()
		}
		close(start)
		wg.Wait()
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
