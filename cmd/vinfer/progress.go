package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/redact"
)

// progress prints one status line per interval: per-stream and total inferred fps and drops.
// On a terminal the line is redrawn in place (\r); otherwise one line per interval.
type progress struct {
	P        defs.Streams
	W        io.Writer
	Terminal bool
	Interval time.Duration

	last     map[string]int64
	lastTime time.Time
	start    time.Time
}

// Run prints until done is closed, then prints a final newline on a terminal.
func (pr *progress) Run(done <-chan struct{}) {
	if pr.Interval <= 0 {
		pr.Interval = time.Second
	}
	pr.start, pr.lastTime, pr.last = time.Now(), time.Now(), map[string]int64{}
	t := time.NewTicker(pr.Interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			if pr.Terminal {
				fmt.Fprint(pr.W, "\n")
			}
			return
		case <-t.C:
			pr.print()
		}
	}
}

func (pr *progress) print() {
	now := time.Now()
	dt := now.Sub(pr.lastTime).Seconds()
	pr.lastTime = now
	var b strings.Builder
	var total float64
	var dropped int64
	streams := pr.P.Streams()
	shown := 0
	for _, s := range streams {
		id, c := s.Decl.ID, &s.Counters
		fps := float64(c.Inferred-pr.last[id]) / dt
		pr.last[id] = c.Inferred
		total += fps
		for _, r := range defs.DropReasons() {
			if !r.Shed() {
				dropped += c.Dropped[r]
			}
		}
		if s.Ended || s.Retry != nil {
			continue // finished streams, and those that could not start, leave the line
		}
		if shown++; shown <= 8 {
			fmt.Fprintf(&b, "%s %.1f fps  ", id, fps)
		}
	}
	if shown > 8 {
		fmt.Fprintf(&b, "(+%d streams)  ", shown-8)
	}
	line := fmt.Sprintf("[%6.1fs] %stotal %.1f fps  dropped %d", now.Sub(pr.start).Seconds(), b.String(), total, dropped)
	if pr.Terminal {
		fmt.Fprintf(pr.W, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(pr.W, line)
	}
}

// summary writes the end-of-run report: per stream frames decoded and inferred, fps, drops by
// reason, the frames not analysed (dropped other than on purpose: share of decoded), the time
// degraded, mean latency, why a stream failed and its attempts, and detections per class. In
// cluster mode, gone are the streams this node ran and stopped for the cluster (handed over,
// fenced), listed with why as their state.
func summary(w io.Writer, streams []defs.StreamInfo, elapsed time.Duration, gone ...cluster.Departed) {
	var decoded, inferred int64
	classes := map[string]int64{}
	local := len(streams)
	states := make([]string, 0, len(streams)+len(gone))
	for _, s := range streams {
		states = append(states, string(s.State()))
	}
	streams = streams[:len(streams):len(streams)] // the caller's array is not written
	for _, g := range gone {
		streams = append(streams, g.Info)
		states = append(states, g.Why)
	}
	if len(gone) == 0 {
		fmt.Fprintf(w, "summary: %d stream(s) in %.2fs\n", local, elapsed.Seconds())
	} else {
		fmt.Fprintf(w, "summary: %d stream(s) in %.2fs: %d here at the end, %d stopped for the cluster (%s)\n",
			len(streams), elapsed.Seconds(), local, len(gone), goneWhy(gone))
	}
	for i, s := range streams {
		st := &s.Counters
		d, n := st.Decoded, st.Inferred
		decoded += d
		inferred += n
		lat := st.MeanLatency()
		id := s.Decl.ID
		if len(id) > 24 {
			id = "…" + id[len(id)-23:]
		}
		fps := 0.0
		if s.Elapsed > 0 {
			fps = float64(n) / s.Elapsed.Seconds()
		}
		fmt.Fprintf(w, "  %-24s model %-12s %-7s decoded %6d  inferred %6d  %7.1f fps  latency %6.1f ms",
			id, s.Decl.Model, states[i], d, n, fps, float64(lat)/1e6)
		for _, r := range defs.DropReasons() {
			if c := st.Dropped[r]; c > 0 {
				fmt.Fprintf(w, "  %s %d", r, c)
			}
		}
		if ss := s.Source; ss != nil { // a live source: what the network did to it
			fmt.Fprintf(w, "  %s  packets %d lost %d", ss.State, ss.Packets, ss.Lost)
			if n := ss.Packets + ss.Lost; n > 0 && ss.Lost > 0 {
				fmt.Fprintf(w, " (%.1f%%)", 100*float64(ss.Lost)/float64(n))
			}
			fmt.Fprintf(w, " damaged %d reconnects %d", ss.Damaged, ss.Reconnects)
			if ss.Outages > 0 {
				fmt.Fprintf(w, " outages %d (%.0fs)", ss.Outages, ss.OutageSeconds)
			}
		}
		if na := st.NotAnalysed(); na > 0 && d > 0 {
			fmt.Fprintf(w, "  not analysed %d (%.1f%%)", na, 100*float64(na)/float64(d))
		}
		if o := s.Overload; o != nil && o.Changes > 0 {
			fmt.Fprintf(w, "  degraded %d time(s), %.0fs", o.Changes, o.DegradedFor.Seconds())
		}
		if s.Err != nil {
			fmt.Fprintf(w, "  error: %s", redact.Message(s.Err.Error(), s.Decl.Source))
		}
		if r := s.Retry; r != nil {
			fmt.Fprintf(w, " (%d attempt(s), retried every %s up to %s)", r.Attempts, r.Initial, r.Max)
		}
		fmt.Fprintln(w)
		for k, v := range s.Classes {
			classes[k] += v
		}
	}
	fmt.Fprintf(w, "  total: decoded %d frames, inferred %d (%.1f fps)\n", decoded, inferred, float64(inferred)/elapsed.Seconds())
	if len(classes) > 0 {
		names := make([]string, 0, len(classes))
		for k := range classes {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool { return classes[names[i]] > classes[names[j]] })
		fmt.Fprint(w, "  detections per class:")
		for _, k := range names {
			fmt.Fprintf(w, " %s %d", k, classes[k])
		}
		fmt.Fprintln(w)
	}
}

// goneWhy counts departed streams by why: "3 handed over, 1 fenced".
func goneWhy(gone []cluster.Departed) string {
	n := map[string]int{}
	var order []string
	for _, g := range gone {
		if n[g.Why] == 0 {
			order = append(order, g.Why)
		}
		n[g.Why]++
	}
	sort.Strings(order)
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%d %s", n[w], w)
	}
	return strings.Join(parts, ", ")
}
