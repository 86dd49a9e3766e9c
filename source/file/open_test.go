package file

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source"
)

// initWithin runs Init, failing the test when it has not returned within d (a hang).
func initWithin(t *testing.T, s *Source, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Init() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Init(%s) still blocked after %v", s.Path, d)
		return nil
	}
}

// TestFIFO: a FIFO nobody writes to parks a thread in open(2) forever; it is refused as not a
// regular file (issue 14, item 3).
func TestFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "clip.mp4")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	s := &Source{Path: fifo}
	defer s.Close()
	err := initWithin(t, s, 30*time.Second)
	if !errors.Is(err, source.ErrNotRegular) {
		t.Fatalf("Init: %v, want ErrNotRegular", err)
	}
}

// TestSwappedForFIFO: a file swapped for a FIFO after its check and before FFmpeg opened it
// parked the thread in open(2) for ever (issue 25, item 5: eight such adds held every opening
// slot until restart). FFmpeg now reads the descriptor that was checked: the clip checked is
// the clip read, whatever the path names by then.
func TestSwappedForFIFO(t *testing.T) {
	clip, err := os.ReadFile(sourcetest.Asset(t, "videos/car-detection.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(path, clip, 0o644); err != nil {
		t.Fatal(err)
	}
	testHookOpen = func(*Source) {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookOpen = nil }()
	s := &Source{Path: path, OpenTimeout: time.Minute}
	defer s.Close()
	if err := initWithin(t, s, 30*time.Second); err != nil {
		t.Fatalf("Init: %v, want the clip checked opened", err)
	}
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

// TestOpenTimeout: the interrupt callback ends an open that outlives OpenTimeout with
// ErrTimeout (the hook holds the open until the deadline passed).
func TestOpenTimeout(t *testing.T) {
	testHookOpen = func(s *Source) {
		for !s.timedOut.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	defer func() { testHookOpen = nil }()
	s := &Source{Path: sourcetest.Asset(t, "videos/car-detection.mp4"), OpenTimeout: time.Millisecond}
	defer s.Close()
	err := initWithin(t, s, 30*time.Second)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Init: %v, want ErrTimeout", err)
	}
}

// TestNoURLFromPath: names FFmpeg would read as URLs (http:, tcp:, concat:, subfile,) are
// files or nothing; a path component over 255 bytes is ErrNameTooLong, never FFmpeg's to
// interpret (issue 14, item 2). A listener counts the connections that must not come.
func TestNoURLFromPath(t *testing.T) {
	peer := sourcetest.NewSilentTCP(t)
	long := strings.Repeat("x", 300)
	for _, path := range []string{
		"http:" + long + "@" + peer.Addr() + "/x",
		"tcp:" + long + "@" + peer.Addr(),
		"http://" + peer.Addr() + "/x", // a kind's URL, but handed to the file source directly
		"tcp://" + peer.Addr(),
		"concat:" + sourcetest.Asset(t, "videos/car-detection.mp4") + "|x",
	} {
		s := &Source{Path: path}
		err := initWithin(t, s, 30*time.Second)
		s.Close()
		if err == nil {
			t.Fatalf("%.50s: opened", path)
		}
		if strings.HasPrefix(path, "http:"+long) && !errors.Is(err, source.ErrNameTooLong) {
			t.Errorf("%.50s: %v, want ErrNameTooLong", path, err)
		}
	}
	if n := peer.Accepted(); n != 0 {
		t.Fatalf("the file source made %d connections", n)
	}
}

// TestPlaylistStaysLocal: an HLS playlist or concat list inside the roots could name files
// (outside the roots) or URLs anywhere; such formats are not opened.
func TestPlaylistStaysLocal(t *testing.T) {
	peer := sourcetest.NewSilentTCP(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"list.m3u8":     "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://" + peer.Addr() + "/a.ts\n#EXT-X-ENDLIST\n",
		"local.m3u8":    "#EXTM3U\n#EXT-X-TARGETDURATION:40\n#EXTINF:31,\nfile:" + sourcetest.Asset(t, "videos/car-detection_remux.ts") + "\n#EXT-X-ENDLIST\n",
		"list.ffconcat": "ffconcat version 1.0\nfile " + sourcetest.Asset(t, "videos/car-detection.mp4") + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &Source{Path: p, Roots: []string{dir}}
		err := initWithin(t, s, 30*time.Second)
		s.Close()
		if err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if n := peer.Accepted(); n != 0 {
		t.Fatalf("a playlist made %d connections", n)
	}
}

// TestFailedOpenReleases: failed opens of files without usable video leave no descriptor
// behind (issue 14, item 6).
func TestFailedOpenReleases(t *testing.T) {
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	dir := t.TempDir()
	audio := filepath.Join(dir, "audio.m4a")
	if out, err := exec.Command(ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=duration=0.2",
		"-c:a", "aac", audio).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	open := func() {
		_, err := Kind.Open(&config.Stream{ID: "a", Source: audio, Model: "m"}, source.Policy{Roots: []string{dir}})
		if err == nil {
			t.Fatal("opened an audio-only file")
		}
	}
	open() // FFmpeg's one-time initialization
	before := sourcetest.OpenFDs(t)
	for range 200 {
		open()
	}
	if after := sourcetest.OpenFDs(t); after != before {
		t.Fatalf("descriptors: %d before 200 failed opens, %d after", before, after)
	}
}
