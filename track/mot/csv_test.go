package mot

import (
	"errors"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	in := "1,-1,281.931,187.466,79.93,209.537,0.997784,-1,-1,-1\n\n 2, 7, 1, 2, 3, 4, 0\n3,1,5,6,7,8,1,-1,-1\n"
	rows, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Frame: 1, ID: -1, X: 281.931, Y: 187.466, W: 79.93, H: 209.537, Conf: 0.997784},
		{Frame: 2, ID: 7, X: 1, Y: 2, W: 3, H: 4, Conf: 0},
		{Frame: 3, ID: 1, X: 5, Y: 6, W: 7, H: 8, Conf: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Fatalf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct{ name, in string }{
		{"short", "1,2,3,4,5,6\n"},
		{"text", "1,a,3,4,5,6,7\n"},
		{"frame 0", "0,1,3,4,5,6,7\n"},
		{"fractional frame", "1.5,1,3,4,5,6,7\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Read(strings.NewReader(c.in)); !errors.Is(err, ErrFormat) {
				t.Fatalf("err %v, want ErrFormat", err)
			}
		})
	}
}

func TestAppendResult(t *testing.T) {
	got := string(AppendResult(nil, Row{Frame: 3, ID: 12, X: 1.234, Y: 5, W: 10.5, H: 20.006, Conf: 0.91234}))
	if want := "3,12,1.23,5.00,10.50,20.01,0.9123,-1,-1,-1\n"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
