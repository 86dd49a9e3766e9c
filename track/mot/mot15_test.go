package mot

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func assetPath(t *testing.T, rel string) string {
	t.Helper()
	_, f, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(f), "..", "..", "assets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s missing (run scripts/setup.sh or scripts/assets.sh): %v", p, err)
	}
	return p
}

// TestMOT15BeatsSORT tracks the two MOT15 training sequences with the vinfer track defaults and
// requires a higher MOTA and IDF1 than SORT's published scores with fewer identity switches
// (MANIFEST §5.2).
func TestMOT15BeatsSORT(t *testing.T) {
	cases := []struct {
		seq              string
		fps              float64
		sortMOTA, sortID float64
		sortIDSW         int
	}{
		{"TUD-Campus", 25, 0.627, 0.606, 6},
		{"KITTI-13", 10, 0.193, 0.438, 16},
	}
	for _, c := range cases {
		t.Run(c.seq, func(t *testing.T) {
			dir := assetPath(t, filepath.Join("tracking/mot15", c.seq))
			dets, err := ReadFile(filepath.Join(dir, "det.txt"))
			if err != nil {
				t.Fatal(err)
			}
			gt, err := ReadFile(filepath.Join(dir, "gt.txt"))
			if err != nil {
				t.Fatal(err)
			}
			tr := Tracker(c.fps)
			if err := tr.Init(); err != nil {
				t.Fatal(err)
			}
			res, err := Run(tr, dets, c.fps, false)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Evaluate(gt, res)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %v", c.seq, m)
			if !(m.MOTA > c.sortMOTA && m.IDF1 > c.sortID && m.IDSW < c.sortIDSW) {
				t.Fatalf("%s: MOTA %.1f IDF1 %.1f IDsw %d, SORT %.1f %.1f %d",
					c.seq, 100*m.MOTA, 100*m.IDF1, m.IDSW, 100*c.sortMOTA, 100*c.sortID, c.sortIDSW)
			}
		})
	}
}
