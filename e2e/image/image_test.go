// Package image tests the container image without a Docker engine or an image registry: it
// builds the runtime image's root filesystem from Debian's packages (docker/rootfs.sh:
// debootstrap, then the same setup script and binary build as the Dockerfile), and runs the
// Dockerfile's ENTRYPOINT and CMD inside it as the Dockerfile's USER, with the root filesystem
// read-only (a mount namespace and chroot), the way Kubernetes runs the Helm chart's pods.
//
// It needs root, debootstrap, unshare, chroot and flock (scripts/setup.sh installs debootstrap),
// and network access to the Debian mirror the first time; it is skipped otherwise, with -short,
// or with VINFER_IMAGE_TEST=0. What is slow once per machine (the base, the static FFmpeg) is
// cached outside the clone (scripts/image-cache.sh).
package image

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// dockerfile is the runtime stage of the Dockerfile: what the image runs and how.
type dockerfile struct {
	Env         []string // KEY=VALUE
	User        string
	Workdir     string
	Entrypoint  []string
	Cmd         []string
	Healthcheck []string
}

// parseDockerfile reads the last stage's ENV, USER, WORKDIR, ENTRYPOINT, CMD and HEALTHCHECK
// (exec forms only, as this Dockerfile writes them).
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	var d dockerfile
	execForm := func(s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("Dockerfile: %q is not an exec form (JSON array): %v", s, err)
		}
		return v
	}
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			d = dockerfile{}
		case "ENV":
			d.Env = append(d.Env, strings.Fields(rest)...)
		case "USER":
			d.User = rest
		case "WORKDIR":
			d.Workdir = rest
		case "ENTRYPOINT":
			d.Entrypoint = execForm(rest)
		case "CMD":
			d.Cmd = execForm(rest)
		case "HEALTHCHECK":
			_, c, ok := strings.Cut(rest, "CMD ")
			if !ok {
				t.Fatalf("Dockerfile: HEALTHCHECK without CMD: %q", rest)
			}
			d.Healthcheck = execForm(strings.TrimSpace(c))
		}
	}
	return d
}

func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRuntimeImage(t *testing.T) {
	if testing.Short() || os.Getenv("VINFER_IMAGE_TEST") == "0" {
		t.Skip("image test off (-short or VINFER_IMAGE_TEST=0)")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root (debootstrap, mount namespace, chroot)")
	}
	for _, tool := range []string{"debootstrap", "unshare", "chroot", "mount", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (scripts/setup.sh installs debootstrap)", tool)
		}
	}
	root := repoRoot(t)
	assets := os.Getenv("VINFER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "assets")
	}
	model := filepath.Join(assets, "models", "yolox_nano_416.onnx")
	clip := filepath.Join(assets, "videos", "one-by-one-person-detection.mp4") // 1394 frames
	for _, f := range []string{model, clip} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("assets not set up (scripts/setup.sh): %v", err)
		}
	}
	df := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if df.User == "" || strings.HasPrefix(df.User, "0") || df.User == "root" {
		t.Fatalf("Dockerfile: USER %q: the image must run as a non-root user", df.User)
	}
	if len(df.Entrypoint) == 0 || len(df.Healthcheck) == 0 {
		t.Fatalf("Dockerfile: ENTRYPOINT %q, HEALTHCHECK %q: both needed", df.Entrypoint, df.Healthcheck)
	}

	// Build the root filesystem. The base and the static FFmpeg come from the machine's cache,
	// built once by scripts/image-cache.sh (scripts/setup.sh and scripts/test.sh run it), never
	// here: a test's time limit must not cut a build of many minutes that is making progress.
	check := exec.Command(filepath.Join(root, "scripts", "image-cache.sh"), "--check")
	if out, err := check.CombinedOutput(); err != nil {
		t.Skipf("the image's base and static FFmpeg are not built yet: run scripts/image-cache.sh "+
			"once (minutes; scripts/test.sh does): %v\n%s", err, out)
	}
	// What remains (the binary, with Go's build cache) runs for as long as it keeps printing.
	rootfs := filepath.Join(root, ".build", "image-rootfs")
	build := exec.Command(filepath.Join(root, "docker", "rootfs.sh"), rootfs)
	build.Env = os.Environ()
	if lib := filepath.Join(root, "third_party", "ort", "lib", "libonnxruntime.so.1"); fileExists(lib) {
		build.Env = append(build.Env, "ORT_LIB="+lib) // checked against the pinned sha256
	}
	started := time.Now()
	out, err := runBuild(build, buildStall)
	if err != nil {
		t.Fatalf("docker/rootfs.sh: %v\n%s", err, out)
	}
	t.Logf("docker/rootfs.sh: %s", time.Since(started).Round(time.Second))
	checkRootfs(t, rootfs, df)

	// A file job: the config, the models and the clip mounted read-only, /data writable.
	port, data, cfg := jobFiles(t, "0.0.0.0")
	const token = "image-test-token"
	mounts := [][3]string{ // host, in the image, options
		{filepath.Dir(model), "/models", "ro"},
		{cfg, "/etc/vinfer/config.yaml", "ro"},
		{data, "/data", "rw"},
		{filepath.Dir(clip), "/data/videos", "ro"},
	}
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/nonexistent", "VINFER_API_TOKEN=" + token}, df.Env...)
	argv := append(append([]string{}, df.Entrypoint...), df.Cmd...)
	script := containerScript(rootfs, mounts, df, env, argv)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--fork", "--", "/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second // a process outside the group holding the output open cannot hang Wait
	var logs testutil.LogBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	must(t, cmd.Start())
	// exited closes when the container's process has ended (waitErr then says how): a channel
	// every waiter can read, so a wait that saw the exit cannot leave the cleanup blocked.
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("container output:\n%s", logs.String())
		}
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path string) (int, []byte, error) { return httpGet(base+path, token) }
	waitFor(t, exited, &waitErr, 5*time.Minute, "/healthz answering 200", func() bool {
		code, _, err := get("/healthz")
		return err == nil && code == http.StatusOK
	})
	// The image's own HEALTHCHECK command, run inside the image as its user.
	hc := exec.Command("chroot", "--userspec="+df.User, rootfs, "/usr/bin/env", "-i",
		fmt.Sprintf("VINFER_HEALTHCHECK_URL=http://127.0.0.1:%d/healthz", port))
	hc.Args = append(hc.Args, df.Healthcheck...)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Fatalf("HEALTHCHECK %q: %v\n%s", df.Healthcheck, err, out)
	}
	// The token from VINFER_API_TOKEN guards the API.
	if resp, err := http.Get(base + "/api/streams"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/streams without the token: %v %v, want 401", resp.StatusCode, err)
	}
	waitFor(t, exited, &waitErr, 4*time.Minute, "stream people ended", func() bool {
		code, b, err := get("/api/streams/people")
		if err != nil || code != http.StatusOK {
			return false
		}
		var v struct {
			State, Error string
			Inferred     int64
		}
		_ = json.Unmarshal(b, &v)
		if v.State == "failed" {
			t.Fatalf("stream failed: %s", v.Error)
		}
		return v.State == "ended"
	})
	must(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("vinfer exited with %v after SIGTERM", waitErr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("vinfer did not stop within 60 s of SIGTERM")
	}

	checkJobOutput(t, filepath.Join(data, "detections.jsonl"), df.User)
}

// checkJobOutput checks the file job's output: one JSON line per inferred frame (every 10th
// of 1394), people in most (the same binary on the host: 105 of 140), written by the image's
// user (uid:gid).
func checkJobOutput(t *testing.T, out, user string) {
	t.Helper()
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatalf("no output: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fmt.Sprintf("%d:%d", st.Uid, st.Gid) != user {
		t.Errorf("output owned by %d:%d, want the image's user %s", st.Uid, st.Gid, user)
	}
	f, err := os.Open(out)
	must(t, err)
	defer f.Close()
	lines, people := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Source     string
			Frame      int
			Detections []struct{ Label string }
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("output line %d: %v", lines+1, err)
		}
		if r.Source != "people" || r.Frame != 10*lines {
			t.Fatalf("output line %d: source %q frame %d, want people, frame %d", lines+1, r.Source, r.Frame, 10*lines)
		}
		for _, d := range r.Detections {
			if d.Label == "person" {
				people++
				break
			}
		}
		lines++
	}
	must(t, sc.Err())
	if lines != 140 || people < 95 {
		t.Fatalf("output: %d lines, %d with a person; want 140 (frames 0, 10, …, 1390), most with a person", lines, people)
	}
	t.Logf("image: %d result lines, %d with a person", lines, people)
}

// checkRootfs checks what the image holds: the binary, ONNX Runtime, the CA certificates, the
// user, and nothing owned by that user outside /data.
func checkRootfs(t *testing.T, rootfs string, df dockerfile) {
	t.Helper()
	for _, e := range df.Env {
		if k, v, _ := strings.Cut(e, "="); k == "VINFER_ORT_LIB" && !fileExists(filepath.Join(rootfs, v)) {
			t.Errorf("VINFER_ORT_LIB=%s: not in the image", v)
		}
	}
	for _, f := range []string{df.Entrypoint[0], "/etc/ssl/certs/ca-certificates.crt", "/etc/vinfer/config.yaml"} {
		if !fileExists(filepath.Join(rootfs, f)) {
			t.Errorf("%s: not in the image", f)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	must(t, err)
	uid, _, _ := strings.Cut(df.User, ":")
	if !bytes.Contains(passwd, []byte(":x:"+uid+":")) {
		t.Errorf("USER %s: no such user in /etc/passwd", df.User)
	}
	// The binary needs nothing from the image but libc (FFmpeg is static, ORT is dlopen'ed).
	out, err := exec.Command("chroot", rootfs, "/usr/bin/ldd", df.Entrypoint[0]).CombinedOutput()
	if err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "not found") || strings.Contains(l, "libav") {
				t.Errorf("ldd %s: %s", df.Entrypoint[0], l)
			}
		}
	}
}

// containerScript mounts the root filesystem read-only with the volumes, a tmpfs /tmp, /proc,
// /dev and /sys, checks that the root is read-only, and runs argv as the image's user.
func containerScript(rootfs string, mounts [][3]string, df dockerfile, env, argv []string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var b strings.Builder
	fmt.Fprintf(&b, "set -e\nR=%s\n", q(rootfs))
	b.WriteString("mount --bind \"$R\" \"$R\"\nmount -o remount,bind,ro \"$R\"\n")
	b.WriteString("mount -t proc proc \"$R/proc\"\nmount --rbind /dev \"$R/dev\"\nmount --rbind /sys \"$R/sys\"\n")
	b.WriteString("mount -t tmpfs -o mode=1777,size=64m tmpfs \"$R/tmp\"\n")
	for _, m := range mounts {
		fmt.Fprintf(&b, "mount --bind %s \"$R\"%s\n", q(m[0]), q(m[1]))
		if m[2] == "ro" {
			fmt.Fprintf(&b, "mount -o remount,bind,ro \"$R\"%s\n", q(m[1]))
		}
	}
	b.WriteString("if chroot \"$R\" /usr/bin/touch /.probe 2>/dev/null; then echo 'root filesystem is writable' >&2; exit 3; fi\n")
	workdir := df.Workdir
	if workdir == "" {
		workdir = "/"
	}
	fmt.Fprintf(&b, "exec chroot --userspec=%s \"$R\" /usr/bin/env -i -C %s", q(df.User), q(workdir))
	for _, e := range env {
		b.WriteString(" " + q(e))
	}
	for _, a := range argv {
		b.WriteString(" " + q(a))
	}
	b.WriteString("\n")
	return b.String()
}

func waitFor(t *testing.T, exited <-chan struct{}, waitErr *error, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		select {
		case <-exited:
			t.Fatalf("waiting for %s: vinfer exited: %v", what, *waitErr)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jobFiles writes the file job both image tests run: a config serving the API on host and a
// free port, and a writable data folder (detections.jsonl goes there; the clip is mounted at
// /data/videos).
func jobFiles(t *testing.T, host string) (port int, data, cfg string) {
	port = testutil.FreePort(t)
	tmp := t.TempDir()
	data = filepath.Join(tmp, "data")
	must(t, os.MkdirAll(filepath.Join(data, "videos"), 0o777))
	must(t, os.Chmod(data, 0o777))
	cfg = filepath.Join(tmp, "config.yaml")
	must(t, os.WriteFile(cfg, fmt.Appendf(nil, `models:
  - {name: yolox, path: /models/yolox_nano_416.onnx, preload: true, intra_op_threads: 1}
streams:
  - {id: people, source: /data/videos/one-by-one-person-detection.mp4, model: yolox, interval: 10}
output:
  http: %s:%d
  jsonl: none
  sinks:
    - {type: jsonl, path: /data/detections.jsonl, all_frames: true}
`, host, port), 0o644))
	return port, data, cfg
}

// httpGet fetches url with the bearer token when token is not empty; 5 s at most.
func httpGet(url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
