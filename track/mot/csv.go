package mot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrFormat is returned for a line that is not a MOTChallenge row.
var ErrFormat = errors.New("mot: not a MOTChallenge row")

// Row is one line of a MOTChallenge file: frame,id,x,y,w,h,conf,…
type Row struct {
	// Frame is the frame number, 1-based.
	Frame int
	// ID is the identity (-1 in detection files).
	ID int64
	// X, Y, W, H are the box's top-left corner and size in pixels.
	X, Y, W, H float64
	// Conf is the detection score; in ground truth 0 marks a row to ignore.
	Conf float64
}

// Read parses a MOTChallenge CSV stream: at least 7 comma-separated fields a line (spaces around
// them allowed), further fields ignored, blank lines skipped. It returns an error wrapping
// ErrFormat with the line number for a malformed line.
func Read(r io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var f [7]float64
		fields := strings.SplitN(line, ",", 8)
		if len(fields) < 7 {
			return nil, fmt.Errorf("%w: line %d: %d fields, want at least 7", ErrFormat, n, len(fields))
		}
		for k := range f {
			v, err := strconv.ParseFloat(strings.TrimSpace(fields[k]), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d field %d: %v", ErrFormat, n, k+1, err)
			}
			f[k] = v
		}
		if f[0] < 1 || f[0] != float64(int(f[0])) || f[1] != float64(int64(f[1])) {
			return nil, fmt.Errorf("%w: line %d: frame %v, id %v: want integers, frame ≥ 1", ErrFormat, n, f[0], f[1])
		}
		rows = append(rows, Row{Frame: int(f[0]), ID: int64(f[1]), X: f[2], Y: f[3], W: f[4], H: f[5], Conf: f[6]})
	}
	return rows, sc.Err()
}

// ReadFile reads a MOTChallenge file with Read.
func ReadFile(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// AppendResult appends r as a MOTChallenge result line "frame,id,x,y,w,h,conf,-1,-1,-1\n", with
// coordinates to 2 decimals and the score to 4.
func AppendResult(b []byte, r Row) []byte {
	b = strconv.AppendInt(b, int64(r.Frame), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.ID, 10)
	for _, v := range [4]float64{r.X, r.Y, r.W, r.H} {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'f', 2, 64)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.Conf, 'f', 4, 64)
	return append(b, ",-1,-1,-1\n"...)
}
