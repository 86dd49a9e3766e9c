package model

import (
	"os"
	"testing"

	"github.com/vinfer/vinfer/infer"
)

// noSpin are the session entries Load sets (intra-op threads do not spin).
var noSpin = map[string]string{"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}

// BenchmarkSessionBytes: creating a YOLOX-Nano session from the model read into the Go heap
// (os.ReadFile), from the mmap'ed file (mapFile, what Load does), and from the path (ONNX
// Runtime reads the file itself into the C heap). B/op shows the Go-heap copy the read makes.
func BenchmarkSessionBytes(b *testing.B) {
	path := yoloxPath(b)
	for _, mode := range []string{"readfile", "mmap", "ort-path"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				cfg := infer.Config{Path: path, ConfigEntries: noSpin}
				unmap := func() {}
				switch mode {
				case "readfile":
					data, err := os.ReadFile(path)
					if err != nil {
						b.Fatal(err)
					}
					cfg.Model = data
				case "mmap":
					data, u, _, err := mapFile(path)
					if err != nil {
						b.Fatal(err)
					}
					cfg.Model, unmap = data, u
				}
				s, err := infer.Open(cfg)
				unmap()
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
