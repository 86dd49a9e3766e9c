package mot

import (
	"errors"
	"math"
	"testing"
)

// traj returns rows of identity id over frames from..to with box b moved by dx per frame.
func traj(id int64, from, to int, b [4]float64, dx float64) []Row {
	var rows []Row
	for f := from; f <= to; f++ {
		x := b[0] + dx*float64(f-from)
		rows = append(rows, Row{Frame: f, ID: id, X: x, Y: b[1], W: b[2], H: b[3], Conf: 1})
	}
	return rows
}

func cat(parts ...[]Row) []Row {
	var out []Row
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	boxA = [4]float64{0, 0, 10, 10}
	boxB = [4]float64{100, 0, 10, 10}
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name    string
		gt, res []Row
		want    Metrics
	}{
		{
			name: "perfect",
			gt:   cat(traj(1, 1, 3, boxA, 1), traj(2, 1, 3, boxB, 1)),
			res:  cat(traj(10, 1, 3, boxA, 1), traj(20, 1, 3, boxB, 1)),
			want: Metrics{GT: 6, Pred: 6, GTTracks: 2, TP: 6, MT: 2, MOTA: 1, MOTP: 1, IDTP: 6, IDF1: 1, IDP: 1, IDR: 1},
		},
		{
			// One object, the tracker changes identity after 2 of 4 frames: MOTA 1 − 1/4; the best
			// identity pairing covers 2 of 4 boxes on each side: IDF1 2·2/(4+4).
			name: "identity switch",
			gt:   traj(1, 1, 4, boxA, 0),
			res:  cat(traj(1, 1, 2, boxA, 0), traj(2, 3, 4, boxA, 0)),
			want: Metrics{GT: 4, Pred: 4, GTTracks: 1, TP: 4, IDSW: 1, MT: 1, MOTA: 0.75, MOTP: 1,
				IDTP: 2, IDFP: 2, IDFN: 2, IDF1: 0.5, IDP: 0.5, IDR: 0.5},
		},
		{
			// Matched in frames 1, 2, 4 of 5: two misses, one interruption between the first and
			// last match (frame 5 is after the last match), 60 % tracked.
			name: "fragmentation",
			gt:   traj(1, 1, 5, boxA, 0),
			res:  cat(traj(7, 1, 2, boxA, 0), traj(7, 4, 4, boxA, 0)),
			want: Metrics{GT: 5, Pred: 3, GTTracks: 1, TP: 3, FN: 2, Frag: 1, PT: 1, MOTA: 0.6, MOTP: 1,
				IDTP: 3, IDFN: 2, IDF1: 6.0 / 8, IDP: 1, IDR: 0.6},
		},
		{
			// A box shifted by 6 of 10 pixels has IoU 4/16 < 0.5: a false positive and a miss.
			name: "below threshold",
			gt:   traj(1, 1, 1, boxA, 0),
			res:  traj(1, 1, 1, [4]float64{6, 0, 10, 10}, 0),
			want: Metrics{GT: 1, Pred: 1, GTTracks: 1, FP: 1, FN: 1, ML: 1, MOTA: -1, IDFP: 1, IDFN: 1},
		},
		{
			name: "ignored ground truth",
			gt:   cat(traj(1, 1, 2, boxA, 0), []Row{{Frame: 1, ID: 2, X: 100, W: 10, H: 10, Conf: 0}}),
			res:  traj(5, 1, 2, boxA, 0),
			want: Metrics{GT: 2, Pred: 2, GTTracks: 1, TP: 2, MT: 1, MOTA: 1, MOTP: 1, IDTP: 2, IDF1: 1, IDP: 1, IDR: 1},
		},
		{
			// Frame 2: B moves 2 px next to A and the trackers swap places. Each tracker still
			// overlaps its previous object at IoU 80/120 ≥ 0.5, so the matches are kept (no switch)
			// although swapping would have had IoU 1.
			name: "keeps previous matches",
			gt: cat(traj(1, 1, 2, boxA, 0),
				[]Row{{Frame: 1, ID: 2, X: 100, W: 10, H: 10, Conf: 1}, {Frame: 2, ID: 2, X: 2, W: 10, H: 10, Conf: 1}}),
			res: cat([]Row{{Frame: 1, ID: 1, W: 10, H: 10}, {Frame: 2, ID: 1, X: 2, W: 10, H: 10}},
				[]Row{{Frame: 1, ID: 2, X: 100, W: 10, H: 10}, {Frame: 2, ID: 2, W: 10, H: 10}}),
			want: Metrics{GT: 4, Pred: 4, GTTracks: 2, TP: 4, MT: 2, MOTA: 1, MOTP: (2 + 2*80.0/120) / 4,
				IDTP: 4, IDF1: 1, IDP: 1, IDR: 1},
		},
		{
			// Shared frames (gt × tracker): A×1 = 5, A×2 = 4, B×1 = 4, B×2 = 0. Greedy would pair
			// A with 1 (5); the optimum pairs A with 2 and B with 1 (8). Boxes: 13 each side.
			// Identity switches: A goes from 1 to 2 at frame 6.
			name: "global identity matching",
			gt:   cat(traj(1, 1, 9, boxA, 0), traj(2, 6, 9, boxB, 0)),
			res:  cat(traj(1, 1, 5, boxA, 0), traj(1, 6, 9, boxB, 0), traj(2, 6, 9, boxA, 0)),
			want: Metrics{GT: 13, Pred: 13, GTTracks: 2, TP: 13, IDSW: 1, MT: 2, MOTA: 1 - 1.0/13, MOTP: 1,
				IDTP: 8, IDFP: 5, IDFN: 5, IDF1: 16.0 / 26, IDP: 8.0 / 13, IDR: 8.0 / 13},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Evaluate(c.gt, c.res)
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			g, w := got, c.want
			if !near(g.MOTA, w.MOTA) || !near(g.MOTP, w.MOTP) || !near(g.IDF1, w.IDF1) || !near(g.IDP, w.IDP) || !near(g.IDR, w.IDR) {
				t.Fatalf("got  %+v\nwant %+v", g, w)
			}
			g.MOTA, g.MOTP, g.IDF1, g.IDP, g.IDR = w.MOTA, w.MOTP, w.IDF1, w.IDP, w.IDR
			if g != w {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestEvaluateDuplicateID(t *testing.T) {
	res := cat(traj(1, 1, 1, boxA, 0), traj(1, 1, 1, boxB, 0))
	if _, err := Evaluate(traj(1, 1, 1, boxA, 0), res); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("err %v, want ErrDuplicateID", err)
	}
}
