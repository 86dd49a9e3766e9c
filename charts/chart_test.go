// Package charts tests the Helm chart charts/vinfer with helm's own Go library: `helm lint`
// (strict), `helm template` with several value sets, every rendered manifest decoded strictly
// into its Kubernetes API type (an unknown or misspelt field fails), and the rendered vinfer
// configuration parsed by vinfer's config package.
//
//	cd charts && go test ./...
package charts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/vinfer/vinfer/config"
)

const chartDir = "vinfer"

// newObject returns an empty object of the API type of apiVersion/kind.
func newObject(apiVersion, kind string) (any, bool) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, true
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, true
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, true
	}
	return nil, false
}

// rendered is one manifest: its template file and its decoded object.
type rendered struct {
	File string
	Kind string
	Obj  any
}

// render runs `helm template` on the chart with vals, decodes every document strictly and
// returns them by kind.
func render(t *testing.T, vals map[string]any) map[string][]rendered {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatalf("chart: %v", err)
	}
	opts := chartutil.ReleaseOptions{Name: "cams", Namespace: "video", Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	out := map[string][]rendered{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s[%d]: %v\n%s", name, i, err, doc)
			}
			obj, ok := newObject(head.APIVersion, head.Kind)
			if !ok {
				t.Fatalf("%s[%d]: %s %s: no API type known to this test (add it to newObject)", name, i, head.APIVersion, head.Kind)
			}
			if err := decodeStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s[%d] (%s): %v\n%s", name, i, head.Kind, err, doc)
			}
			out[head.Kind] = append(out[head.Kind], rendered{File: name, Kind: head.Kind, Obj: obj})
		}
	}
	return out
}

// decodeStrict decodes YAML into obj, failing on unknown fields (at any depth) and duplicate
// keys.
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(obj)
}

func one[T any](t *testing.T, m map[string][]rendered, kind string) T {
	t.Helper()
	if len(m[kind]) != 1 {
		t.Fatalf("%d %s manifests, want 1", len(m[kind]), kind)
	}
	return m[kind][0].Obj.(T)
}

func TestLint(t *testing.T) {
	for _, vals := range []map[string]any{nil, allOn()} {
		lr := lint.AllWithKubeVersion(chartDir, vals, "video", nil)
		for _, m := range lr.Messages {
			// Strict, as helm lint --strict: warnings and errors fail, INFO (e.g. no icon) is shown.
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint: %s", m)
			} else {
				t.Logf("helm lint: %s", m)
			}
		}
	}
}

// TestDefaults renders the default values: a Deployment with a restrictive securityContext,
// probes on /healthz and /readyz, the config from a ConfigMap, models from a volume, a Service,
// a PodDisruptionBudget, a generated token Secret, no ServiceMonitor.
func TestDefaults(t *testing.T) {
	m := render(t, nil)
	for _, k := range []string{"ServiceMonitor", "StatefulSet"} {
		if len(m[k]) > 0 {
			t.Errorf("default values render a %s", k)
		}
	}
	d := one[*appsv1.Deployment](t, m, "Deployment")
	pod := d.Spec.Template.Spec
	checkPod(t, pod)
	c := pod.Containers[0]
	if _, ok := c.Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("gpu.count 0 asks for nvidia.com/gpu")
	}
	if got := strings.Join(c.Args, " "); got != "run --config=/etc/vinfer/config.yaml" {
		t.Errorf("args %q", got)
	}
	svc := one[*corev1.Service](t, m, "Service")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
	pdb := one[*policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget")
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("pdb %+v", pdb.Spec)
	}
	sec := one[*corev1.Secret](t, m, "Secret")
	if len(sec.Data["token"]) != 40 {
		t.Errorf("generated token: %d bytes, want 40", len(sec.Data["token"]))
	}
	cfg := parseConfig(t, m)
	if cfg.Output.HTTP != "0.0.0.0:8080" || cfg.Cluster != nil {
		t.Errorf("config: http %q cluster %+v", cfg.Output.HTTP, cfg.Cluster)
	}
	if want := "cams-vinfer.video.svc"; !contains(cfg.Output.AllowedHosts, want) {
		t.Errorf("allowed_hosts %q: no %s", cfg.Output.AllowedHosts, want)
	}
}

// allOn turns on every optional part: GPUs, a ServiceMonitor, cluster mode, a given token.
func allOn() map[string]any {
	return map[string]any{
		"replicaCount":   3,
		"gpu":            map[string]any{"count": 2, "runtimeClassName": "nvidia"},
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"cluster":        map[string]any{"enabled": true, "natsURL": "nats://nats.infra:4222", "maxStreams": 40},
		"auth":           map[string]any{"token": "s3cret-chart-token-01"},
		"models":         map[string]any{"volume": map[string]any{"nfs": map[string]any{"server": "nas", "path": "/models", "readOnly": true}}},
		"config": map[string]any{
			"models":  []any{map[string]any{"name": "yolox", "path": "/models/yolox.onnx", "provider": "cuda", "max_batch": 8}},
			"streams": []any{map[string]any{"id": "gate", "source": "rtsp://cam/1", "model": "yolox", "decoder": "nvdec"}},
		},
	}
}

func TestAllOn(t *testing.T) {
	m := render(t, allOn())
	d := one[*appsv1.Deployment](t, m, "Deployment")
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	checkPod(t, pod)
	c := pod.Containers[0]
	if q := c.Resources.Limits["nvidia.com/gpu"]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("nvidia.com/gpu limit %v, want 2", q.String())
	}
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" {
		t.Error("runtimeClassName nvidia not set")
	}
	tolerated := false
	for _, tl := range pod.Tolerations {
		tolerated = tolerated || tl.Key == "nvidia.com/gpu"
	}
	if !tolerated {
		t.Error("no toleration for nvidia.com/gpu taints")
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--node-name=$(POD_NAME)", "--cluster-advertise=http://$(POD_IP):8080"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q: no %s", args, want)
		}
	}
	if vol := volume(pod, "models"); vol == nil || vol.NFS == nil || vol.NFS.Server != "nas" {
		t.Errorf("models volume %+v", vol)
	}
	sm := one[*monitoringv1.ServiceMonitor](t, m, "ServiceMonitor")
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "http" || ep.Path != "/metrics" || ep.Authorization == nil || ep.Authorization.Credentials.Key != "token" {
		t.Errorf("servicemonitor endpoint %+v", ep)
	}
	if sm.Labels["release"] != "prom" {
		t.Errorf("servicemonitor labels %v", sm.Labels)
	}
	sec := one[*corev1.Secret](t, m, "Secret")
	if string(sec.Data["token"]) != "s3cret-chart-token-01" {
		t.Errorf("token %q", sec.Data["token"])
	}
	cfg := parseConfig(t, m)
	if cfg.Cluster == nil || cfg.Cluster.NATS != "nats://nats.infra:4222" || cfg.Cluster.MaxStreams != 40 || cfg.Cluster.Weight != 2 {
		t.Errorf("cluster config %+v", cfg.Cluster)
	}
}

// TestStatefulSetSharding renders static sharding: a StatefulSet with a headless Service, each
// pod given --shard=auto/N.
func TestStatefulSetSharding(t *testing.T) {
	m := render(t, map[string]any{"kind": "StatefulSet", "replicaCount": 4, "sharding": map[string]any{"enabled": true},
		"auth": map[string]any{"existingSecret": "vinfer-token", "secretKey": "api"}})
	ss := one[*appsv1.StatefulSet](t, m, "StatefulSet")
	checkPod(t, ss.Spec.Template.Spec)
	if !strings.Contains(strings.Join(ss.Spec.Template.Spec.Containers[0].Args, " "), "--shard=auto/4") {
		t.Errorf("args %q", ss.Spec.Template.Spec.Containers[0].Args)
	}
	if len(m["Secret"]) != 0 {
		t.Error("a Secret rendered although auth.existingSecret is set")
	}
	var headless *corev1.Service
	for _, r := range m["Service"] {
		if s := r.Obj.(*corev1.Service); s.Spec.ClusterIP == "None" {
			headless = s
		}
	}
	if headless == nil || ss.Spec.ServiceName != headless.Name {
		t.Fatalf("no headless service named %q", ss.Spec.ServiceName)
	}
	env := ss.Spec.Template.Spec.Containers[0].Env
	for _, e := range env {
		if e.Name == "VINFER_API_TOKEN" && (e.ValueFrom.SecretKeyRef.Name != "vinfer-token" || e.ValueFrom.SecretKeyRef.Key != "api") {
			t.Errorf("token from %+v", e.ValueFrom.SecretKeyRef)
		}
	}
}

// TestBadValues: values the chart refuses with a message.
func TestBadValues(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"kind": "DaemonSet"}, "use Deployment or StatefulSet"},
		{map[string]any{"sharding": map[string]any{"enabled": true}}, "needs kind: StatefulSet"},
		{map[string]any{"kind": "StatefulSet", "sharding": map[string]any{"enabled": true}, "cluster": map[string]any{"enabled": true}}, "exclude each other"},
		{map[string]any{"auth": map[string]any{"token": "s3cret"}}, "auth.token: at least 16 characters"},
	} {
		rv, err := chartutil.ToRenderValues(ch, tc.vals, chartutil.ReleaseOptions{Name: "x", Namespace: "y"}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.Render(ch, rv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.vals, err, tc.want)
		}
	}
}

// TestStrictDecodingCatchesTypos makes sure the decoding above would fail on a misspelt field.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: x\n          readinessProbe: {httpGet: {path: /readyz, port: http}, periodSecond: 5}\n"
	if err := decodeStrict([]byte(doc), &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "periodSecond") {
		t.Fatalf("misspelt field: %v", err)
	}
}

// checkPod checks what every pod of the chart must have.
func checkPod(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || fmt.Sprint(sc.Capabilities.Drop) != "[ALL]" || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext %+v", sc)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.StrVal != "http" {
		t.Errorf("liveness probe %+v", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v", p)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["config"]; m.MountPath != "/etc/vinfer" || !m.ReadOnly || volume(pod, "config").ConfigMap == nil {
		t.Errorf("config mount %+v", m)
	}
	if m := mounts["models"]; m.MountPath != "/models" || !m.ReadOnly {
		t.Errorf("models mount %+v", m)
	}
	if m := mounts["tmp"]; m.MountPath != "/tmp" || volume(pod, "tmp").EmptyDir == nil {
		t.Errorf("/tmp mount %+v (the root filesystem is read-only)", m)
	}
	hasToken := false
	for _, e := range c.Env {
		hasToken = hasToken || (e.Name == "VINFER_API_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
	}
	if !hasToken {
		t.Error("no VINFER_API_TOKEN from a Secret: the API listens beyond loopback")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted (vinfer does not talk to the Kubernetes API)")
	}
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// parseConfig parses the ConfigMap's config.yaml with vinfer's own configuration parser
// (strict: unknown fields fail).
func parseConfig(t *testing.T, m map[string][]rendered) *config.Config {
	t.Helper()
	cm := one[*corev1.ConfigMap](t, m, "ConfigMap")
	cfg, err := config.Parse([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("the rendered vinfer config does not parse: %v\n%s", err, cm.Data["config.yaml"])
	}
	return cfg
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(chartDir); err != nil {
		fmt.Fprintln(os.Stderr, "run from charts/:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestLintCatchesErrors: the lint above would report a broken template.
func TestLintCatchesErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	bad := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.no.such.value }}\n")
	if err := os.WriteFile(dir+"/templates/broken.yaml", bad, 0o644); err != nil {
		t.Fatal(err)
	}
	lr := lint.AllWithKubeVersion(dir, nil, "video", nil)
	errs := 0
	for _, m := range lr.Messages {
		if m.Severity == support.ErrorSev {
			errs++
		}
	}
	if errs == 0 {
		t.Fatalf("helm lint found no error in a broken template: %v", lr.Messages)
	}
}
