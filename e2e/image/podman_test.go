package image

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podmanArgs are podman's global options for this machine: with cgroups in hybrid mode (v1
// controllers beside an empty v2 hierarchy) crun refuses to run, so runc and the cgroupfs
// manager; $PODMAN_OPTS overrides (docker/podman-build.sh chooses the same way).
func podmanArgs() []string {
	if v, ok := os.LookupEnv("PODMAN_OPTS"); ok {
		return strings.Fields(v)
	}
	if fileExists("/sys/fs/cgroup/unified") {
		return []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}
	}
	return nil
}

func podman(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "podman", append(podmanArgs(), args...)...)
	return cmd.CombinedOutput()
}

// TestPodmanImage runs the image the Dockerfile builds (docker/podman-build.sh: podman build,
// the bases made from Debian's packages) as a container: read-only root filesystem, /tmp a
// tmpfs, the config, models and clip mounted read-only, /data writable. /healthz answers, the
// image's own HEALTHCHECK passes (podman healthcheck run), a write to the root fails, the API
// wants the VINFER_API_TOKEN token, the file job ends with the 140 expected result lines, owned
// by the image's user, and `podman stop` (SIGTERM) exits 0. Skipped without podman or the
// image ($VINFER_IMAGE, default vinfer:dev).
func TestPodmanImage(t *testing.T) {
	if testing.Short() || os.Getenv("VINFER_IMAGE_TEST") == "0" {
		t.Skip("image test off (-short or VINFER_IMAGE_TEST=0)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("needs podman (apt-get install podman runc)")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root (podman as root)")
	}
	image := os.Getenv("VINFER_IMAGE")
	if image == "" {
		image = "vinfer:dev"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := podman(ctx, "image", "exists", image); err != nil {
		t.Skipf("no image %s: build it with docker/podman-build.sh %s", image, image)
	}
	root := repoRoot(t)
	assets := os.Getenv("VINFER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "assets")
	}
	model := filepath.Join(assets, "models", "yolox_nano_416.onnx")
	clip := filepath.Join(assets, "videos", "one-by-one-person-detection.mp4")
	for _, f := range []string{model, clip} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("assets not set up (scripts/setup.sh): %v", err)
		}
	}
	// The image's configuration: what the Dockerfile set.
	out, err := podman(ctx, "image", "inspect", image)
	if err != nil {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	var insp []struct {
		Config struct {
			User       string
			Entrypoint []string
		}
		Healthcheck *struct{ Test []string } // docker-format images only
	}
	must(t, json.Unmarshal(out, &insp))
	if len(insp) != 1 {
		t.Fatalf("podman image inspect: %s", out)
	}
	ic := struct {
		User        string
		Healthcheck *struct{ Test []string }
		Entrypoint  []string
	}{insp[0].Config.User, insp[0].Healthcheck, insp[0].Config.Entrypoint}
	if ic.User == "" || strings.HasPrefix(ic.User, "0") || ic.User == "root" {
		t.Fatalf("image user %q: must not be root", ic.User)
	}
	if ic.Healthcheck == nil || len(ic.Healthcheck.Test) == 0 {
		t.Errorf("image without a HEALTHCHECK (build with --format docker: OCI images drop it)")
	}
	t.Logf("image %s: user %s, entrypoint %q, healthcheck %v", image, ic.User, ic.Entrypoint, ic.Healthcheck)

	port, data, cfg := jobFiles(t, "127.0.0.1")
	const token = "podman-test-token"
	name := fmt.Sprintf("vinfer-test-%d", time.Now().UnixNano())
	// Bounded rlimits: a sandbox without CAP_SYS_RESOURCE cannot raise them to podman's defaults.
	args := []string{"run", "-d", "--name", name, "--read-only", "--tmpfs", "/tmp", "--network", "host",
		"--ulimit", "nofile=16384:16384", "--ulimit", "nproc=16384:16384",
		"-e", "VINFER_API_TOKEN=" + token, "-e", fmt.Sprintf("VINFER_HEALTHCHECK_URL=http://127.0.0.1:%d/healthz", port),
		"-v", filepath.Dir(model) + ":/models:ro", "-v", cfg + ":/etc/vinfer/config.yaml:ro",
		"-v", data + ":/data", "-v", filepath.Dir(clip) + ":/data/videos:ro", image}
	if out, err := podman(ctx, args...); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c, done := context.WithTimeout(context.Background(), 90*time.Second)
		defer done()
		if t.Failed() {
			logs, _ := podman(c, "logs", name)
			t.Logf("container output:\n%s", logs)
		}
		_, _ = podman(c, "rm", "-f", "-t", "5", name)
	})
	exited := make(chan struct{}) // never: the container runs detached; waitFor's timeout bounds it
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path string, auth bool) (int, []byte, error) {
		if auth {
			return httpGet(base+path, token)
		}
		return httpGet(base+path, "")
	}
	waitFor(t, exited, nil, 5*time.Minute, "/healthz answering 200", func() bool {
		code, _, err := get("/healthz", false)
		return err == nil && code == http.StatusOK
	})
	if out, err := podman(ctx, "healthcheck", "run", name); err != nil {
		t.Errorf("podman healthcheck run: %v\n%s", err, out)
	}
	// As root inside, so that only the read-only mount can refuse it.
	if out, err := podman(ctx, "exec", "--user", "0", name, "/bin/sh", "-c", "touch /probe"); err == nil || !strings.Contains(string(out), "Read-only file system") {
		t.Errorf("a write to the root filesystem: %v %s, want it refused as read-only", err, out)
	}
	if out, err := podman(ctx, "exec", name, "id", "-u"); err != nil || strings.TrimSpace(string(out)) != strings.Split(ic.User, ":")[0] {
		t.Errorf("runs as uid %q (%v), want %s", out, err, ic.User)
	}
	// The binary needs nothing from the image but libc (FFmpeg is static, ORT is dlopen'ed).
	if out, err := podman(ctx, "exec", name, "/usr/bin/ldd", ic.Entrypoint[0]); err != nil || strings.Contains(string(out), "not found") || strings.Contains(string(out), "libav") {
		t.Errorf("ldd %s: %v\n%s", ic.Entrypoint[0], err, out)
	}
	if code, _, err := get("/api/streams", false); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("GET /api/streams without the token: %d %v, want 401", code, err)
	}
	waitFor(t, exited, nil, 4*time.Minute, "stream people ended", func() bool {
		code, b, err := get("/api/streams/people", true)
		if err != nil || code != http.StatusOK {
			return false
		}
		var v struct{ State, Error string }
		_ = json.Unmarshal(b, &v)
		if v.State == "failed" {
			t.Fatalf("stream failed: %s", v.Error)
		}
		return v.State == "ended"
	})
	if out, err := podman(ctx, "stop", "-t", "60", name); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	out, err = podman(ctx, "inspect", "--format", "{{.State.ExitCode}}", name)
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("exit code after SIGTERM: %q %v, want 0", out, err)
	}
	checkJobOutput(t, filepath.Join(data, "detections.jsonl"), ic.User)
}
