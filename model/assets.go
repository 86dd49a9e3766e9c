package model

import (
	"os"
	"path/filepath"
)

// FindAssets returns vinfer's assets directory (models, labels, videos set up by
// scripts/setup.sh): $VINFER_ASSETS, else an "assets" directory beside the executable or the
// working directory, or one of their parents. It returns "" when none exists.
func FindAssets() string {
	if d := os.Getenv("VINFER_ASSETS"); d != "" {
		return d
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			if fi, err := os.Stat(filepath.Join(d, "assets", "models")); err == nil && fi.IsDir() {
				return filepath.Join(d, "assets")
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return ""
}
