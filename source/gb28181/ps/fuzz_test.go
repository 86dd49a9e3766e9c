package ps

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vinfer/vinfer/media"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seed corpus under testdata/fuzz")

// demuxSeeds returns program streams of small synthetic H.264 and H.265 frames written by the
// Muxer with each set of quirks, behind a first byte that seeds the chunking.
func demuxSeeds() map[string][]byte {
	frames := map[media.Codec][][]byte{
		media.CodecH264: {
			{0, 0, 0, 1, 0x67, 0x42, 0xc0, 0x16, 0xda, 0, 0, 0, 1, 0x68, 0xce, 0x3c, 0x80, 0, 0, 0, 1, 0x65, 0x88, 0x84, 0x21, 0x43},
			{0, 0, 0, 1, 0x41, 0x9a, 0x11, 0x22},
			{0, 0, 0, 1, 0x41, 0x9a, 0x33, 0x44, 0x55},
		},
		media.CodecH265: {
			{0, 0, 0, 1, 0x40, 0x01, 0x0c, 0, 0, 0, 1, 0x42, 0x01, 0x01, 0, 0, 0, 1, 0x44, 0x01, 0xc1, 0, 0, 0, 1, 0x26, 0x01, 0xaf, 0x12},
			{0, 0, 0, 1, 0x02, 0x01, 0xd0, 0x34},
		},
	}
	seeds := map[string][]byte{}
	for i, tc := range quirkCases {
		for codec, fs := range frames {
			m := Muxer{Codec: codec, MaxPES: max(tc.maxPES/100, 4), Quirks: tc.q}
			b := []byte{byte(i)}
			for j, f := range fs {
				b = m.Frame(b, f, int64(j)*3600, int64(j)*3600, j == 0)
			}
			seeds[fmt.Sprintf("%s-%d", codec, i)] = b
		}
	}
	return seeds
}

func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDemux")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range demuxSeeds() {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type demuxResult struct {
	frames []captured
	stats  Stats
}

func demuxChunks(in []byte, rng *rand.Rand) demuxResult {
	var r demuxResult
	d := Demuxer{OnFrame: capture(&r.frames), MaxFrame: 1 << 20}
	for len(in) > 0 {
		n := len(in)
		if rng != nil {
			n = min(n, 1+rng.IntN(64))
		}
		d.Write(in[:n])
		in = in[n:]
		if len(d.pend) > 6+0xFFFF {
			panic(fmt.Sprintf("%d bytes pending", len(d.pend)))
		}
	}
	d.Flush()
	r.stats = d.Stats()
	return r
}

// FuzzDemux feeds arbitrary bytes as a program stream: the Demuxer must not panic, must keep
// its buffer bounded, must deliver well-formed frames, and must not depend on how the stream
// was cut into chunks.
func FuzzDemux(f *testing.F) {
	for _, b := range demuxSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		whole := demuxChunks(in[1:], nil)
		cut := demuxChunks(in[1:], rand.New(rand.NewPCG(uint64(in[0]), 1)))
		for _, fr := range whole.frames {
			if len(fr.data) == 0 || len(fr.data) > 1<<20 {
				t.Fatalf("frame of %d bytes", len(fr.data))
			}
			if fr.codec > media.CodecH265 || fr.pts>>33 != 0 || fr.dts>>33 != 0 {
				t.Fatalf("frame %+v", fr)
			}
		}
		if len(whole.frames) != len(cut.frames) {
			t.Fatalf("%d frames in one piece, %d in chunks", len(whole.frames), len(cut.frames))
		}
		for i := range whole.frames {
			if !reflect.DeepEqual(whole.frames[i], cut.frames[i]) {
				t.Fatalf("frame %d differs with chunking:\n%+v\n%+v", i, whole.frames[i], cut.frames[i])
			}
		}
		if whole.stats != cut.stats {
			t.Fatalf("stats differ with chunking:\n%+v\n%+v", whole.stats, cut.stats)
		}
	})
}

func TestFuzzSeedsDemux(t *testing.T) {
	for name, b := range demuxSeeds() {
		r := demuxChunks(b[1:], rand.New(rand.NewPCG(uint64(b[0]), 1)))
		want := 2 // without PTS and without Flush, frames cannot be told apart
		if bytes.Contains([]byte(name), []byte("-4")) {
			want = 1
		}
		if len(r.frames) < want || !bytes.HasPrefix(r.frames[0].data, []byte{0, 0, 0, 1}) {
			t.Errorf("%s: %d frames, stats %+v", name, len(r.frames), r.stats)
		}
	}
}
