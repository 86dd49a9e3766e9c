package model_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/memstat"
	"github.com/vinfer/vinfer/model"
)

// BenchmarkColdStart: 8 streams start at once on a cold model (YOLOX-Nano, no optimized-model
// cache). "eager" gives each stream its own load (8 registries: 8 sessions, each optimized and
// warmed up), as the seed did; "singleflight" shares one registry, so the 8 wait on one load.
// ns/op is the time until every stream holds a warmed-up model; loads/op the sessions created;
// native-MiB the C heap the loaded models hold.
func BenchmarkColdStart(b *testing.B) {
	const streams = 8
	decl := yoloxDecl(b)
	newReg := func() *model.Registry {
		r := model.NewRegistry([]config.Model{decl})
		r.CacheDir = ""
		return r
	}
	for _, mode := range []string{"eager", "singleflight"} {
		b.Run(fmt.Sprintf("%s/streams=%d", mode, streams), func(b *testing.B) {
			var loads, held int64
			b.StopTimer()
			for range b.N {
				regs := make([]*model.Registry, streams)
				for i := range regs {
					if mode == "eager" || i == 0 {
						regs[i] = newReg()
					} else {
						regs[i] = regs[0]
					}
				}
				n0 := memstat.NativeInUse()
				start := make(chan struct{})
				var wg sync.WaitGroup
				b.StartTimer()
				for i := range streams {
					wg.Go(func() {
						<-start
						if _, err := regs[i].Get(decl.Name); err != nil {
							b.Error(err)
						}
					})
				}
				close(start)
				wg.Wait()
				b.StopTimer()
				held += memstat.NativeInUse() - n0
				for i, r := range regs {
					if i == 0 || r != regs[0] {
						loads += r.Loads()
						r.Close()
					}
				}
			}
			b.ReportMetric(float64(loads)/float64(b.N), "loads/op")
			b.ReportMetric(float64(held)/float64(b.N)/(1<<20), "native-MiB")
		})
	}
}

// BenchmarkLoad: one model load (session creation, no warm-up) of each bundled model without
// the optimized-model cache ("nocache"), on a cache miss (optimizing and writing the cache
// file) and on a cache hit (reading the optimized graph with optimization off).
func BenchmarkLoad(b *testing.B) {
	for _, name := range bundled {
		decl, err := model.Declare(filepath.Join(assets(b), "models", name+".onnx"))
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []model.CacheState{"nocache", model.CacheMiss, model.CacheHit} {
			b.Run(name+"/"+string(mode), func(b *testing.B) {
				l := model.Loader{}
				if mode != "nocache" {
					l.CacheDir = b.TempDir()
				}
				if mode == model.CacheHit {
					m, err := l.Load(decl) // fill the cache
					if err != nil {
						b.Fatal(err)
					}
					m.Close()
				}
				for range b.N {
					if mode == model.CacheMiss {
						b.StopTimer()
						os.RemoveAll(l.CacheDir)
						b.StartTimer()
					}
					m, err := l.Load(decl)
					if err != nil {
						b.Fatal(err)
					}
					if want := mode; m.Cache != want && (mode != "nocache" || m.Cache != model.CacheOff) {
						b.Fatalf("cache %s, want %s", m.Cache, want)
					}
					m.Close()
				}
			})
		}
	}
}
