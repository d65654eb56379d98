package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestIsEchoImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  bool
	}{
		{"registry.k8s.io/gateway-api/echo-basic:v1.5.1", true},
		{"registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3", true},
		{"registry.k8s.io/gateway-api/echo-basic@sha256:0123", true},
		{"echo-basic", true},
		{"localhost:5000/echo-basic", true},
		{"registry.k8s.io/gateway-api/echo-advanced:v1.6.0", false},
		{"registry.k8s.io/coredns/coredns:v1.12.2", false},
		{"registry.k8s.io/not-echo-basic:v1", false},
		{"echo-basic-fork:v1", false},
		{"localhost:5000", false},
		{"", false},
	} {
		if got := isEchoImage(tc.image); got != tc.want {
			t.Errorf("isEchoImage(%q) = %v, want %v", tc.image, got, tc.want)
		}
	}
}

func TestIsLeanImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  bool
	}{
		{"sluice-test/lean-echo", true},
		{"sluice-test/lean-echo:v1", true},
		{"sluice-test/lean-echo@sha256:0123", true},
		{"localhost:5000/sluice-test/lean-echo:latest", true},
		{"lean-echo", false},
		{"other/lean-echo", false},
		{"sluice-test/lean-echo-fork", false},
		{"xsluice-test/lean-echo", false},
		{"registry.k8s.io/gateway-api/echo-basic:v1.6.3", false},
		{"", false},
	} {
		if got := isLeanImage(tc.image); got != tc.want {
			t.Errorf("isLeanImage(%q) = %v, want %v", tc.image, got, tc.want)
		}
		if tc.want && isEchoImage(tc.image) {
			t.Errorf("isEchoImage(%q) = true for the lean image", tc.image)
		}
	}
}

// FuzzIsEchoImage checks that a tag or digest never changes the answer,
// of isEchoImage and of isLeanImage, and that no image is both.
func FuzzIsEchoImage(f *testing.F) {
	f.Add("registry.k8s.io/gateway-api/echo-basic", "v1.5.1")
	f.Add("localhost:5000/echo-basic", "latest")
	f.Add("coredns", "1")
	f.Fuzz(func(t *testing.T, name, tag string) {
		if strings.ContainsAny(tag, ":/@") || strings.Contains(name, "@") || tag == "" {
			return
		}
		if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
			return // name already has a tag
		}
		for _, is := range []struct {
			name string
			f    func(string) bool
		}{{"isEchoImage", isEchoImage}, {"isLeanImage", isLeanImage}} {
			base := is.f(name)
			if got := is.f(name + ":" + tag); got != base {
				t.Errorf("%s(%q) = %v but %s(%q) = %v", is.name, name+":"+tag, got, is.name, name, base)
			}
			if got := is.f(name + "@sha256:" + tag); got != base {
				t.Errorf("%s(%q) = %v but %s(%q) = %v", is.name, name+"@sha256:"+tag, got, is.name, name, base)
			}
		}
		if isEchoImage(name) && isLeanImage(name) {
			t.Errorf("%q is both echo-basic and lean-echo", name)
		}
	})
}

func TestLeanConfig(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "churn-7d9f-x2k4q", Namespace: "sluice-load"}}
	for _, tc := range []struct {
		name       string
		ports      []corev1.ContainerPort
		wantListen []string
		wantErr    string
	}{
		{"one port", []corev1.ContainerPort{{ContainerPort: 3000}}, []string{":3000"}, ""},
		{"TCP ports once each, UDP left out", []corev1.ContainerPort{
			{ContainerPort: 3000, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP},
			{Name: "again", ContainerPort: 3000}, {ContainerPort: 8443},
		}, []string{":3000", ":8443"}, ""},
		{"no port", nil, nil, "lists no TCP port"},
		{"UDP only", []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}}, nil, "lists no TCP port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := leanConfig(pod, corev1.Container{Name: "echo", Image: leanImage, Ports: tc.ports})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Listen    []string
				User      string
				Log       struct{ Level string }
				RequestID *bool `json:"request_id"`
				AccessLog any   `json:"access_log"`
				Routes    []struct {
					Match    string
					Pipeline []struct {
						Text struct {
							Body        string
							ContentType string `json:"content_type"`
						}
					}
				}
			}
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatalf("%v:\n%s", err, b)
			}
			if !slices.Equal(cfg.Listen, tc.wantListen) {
				t.Errorf("listen = %q, want %q", cfg.Listen, tc.wantListen)
			}
			if cfg.User != "root" || cfg.Log.Level != "warn" || cfg.RequestID == nil || *cfg.RequestID || cfg.AccessLog != nil {
				t.Errorf("user %q, log level %q, request_id %v, access_log %v; want root, warn, false, none:\n%s", cfg.User, cfg.Log.Level, cfg.RequestID, cfg.AccessLog, b)
			}
			if len(cfg.Routes) != 1 || cfg.Routes[0].Match != "/" || len(cfg.Routes[0].Pipeline) != 1 {
				t.Fatalf("routes: want one, / to one text component:\n%s", b)
			}
			text := cfg.Routes[0].Pipeline[0].Text
			if want := `{"pod":"churn-7d9f-x2k4q","namespace":"sluice-load"}`; text.Body != want || text.ContentType != "application/json" {
				t.Errorf("text body %s (%s), want %s (application/json)", text.Body, text.ContentType, want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	ports := []corev1.ContainerPort{{ContainerPort: 3000}}
	echo := corev1.Container{Name: "e", Image: "registry.k8s.io/gateway-api/echo-basic:v1.6.3", Ports: ports}
	lean := corev1.Container{Name: "l", Image: leanImage + ":v1", Ports: ports}
	dir := t.TempDir()

	k := &kubelet{echo: "/bin/echo-basic", lean: "/bin/lean-echo"}
	if got, err := k.command(pod, echo, dir); err != nil || !slices.Equal(got, []string{"/bin/echo-basic"}) {
		t.Errorf("echo-basic container: %q, %v; want the echo-basic binary", got, err)
	}
	got, err := k.command(pod, lean, dir)
	file := filepath.Join(dir, "lean-l.yaml")
	if err != nil || !slices.Equal(got, []string{"/bin/lean-echo", "serve", "-c", file}) {
		t.Fatalf("lean-echo container: %q, %v; want sluice serve -c %s", got, err, file)
	}
	want, _ := leanConfig(pod, lean)
	if b, err := os.ReadFile(file); err != nil || string(b) != string(want) {
		t.Errorf("%s holds %q, %v; want\n%s", file, b, err, want)
	}

	k.lean = ""
	if got, err := k.command(pod, lean, dir); err == nil || !strings.Contains(err.Error(), "-sluice") {
		t.Errorf("lean-echo container without -sluice: %q, %v; want an error naming -sluice", got, err)
	}
	lean.Ports = nil
	k.lean = "/bin/lean-echo"
	if got, err := k.command(pod, lean, dir); err == nil || !strings.Contains(err.Error(), "no TCP port") {
		t.Errorf("lean-echo container without a port: %q, %v; want an error", got, err)
	}
}

// TestLeanServe runs sluice, built from this repository, on a config of
// leanConfig by the name leanBinary gives it, and checks its answers and
// its process name.
func TestLeanServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sluice")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH to build sluice")
	}
	if os.Geteuid() != 0 {
		t.Skip("the lean config says user: root, which only root may serve as")
	}
	dir := t.TempDir()
	sluice := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", sluice, "./cmd/sluice")
	build.Dir = "../../../.." // the repository's root, the server's module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	bin, err := leanBinary(filepath.Join(dir, "bin"), sluice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leanBinary(filepath.Join(dir, "bin2"), filepath.Join(dir, "missing")); err == nil {
		t.Error("leanBinary of a missing file: no error")
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lean-1", Namespace: "ns"}}
	cfg, err := leanConfig(pod, corev1.Container{Name: "echo", Image: leanImage, Ports: []corev1.ContainerPort{{ContainerPort: 3000}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "lean.yaml")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "-c", file).CombinedOutput(); err != nil {
		t.Fatalf("sluice check refuses the lean config: %v\n%s\n%s", err, out, cfg)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var log strings.Builder
	cmd := exec.Command(bin, "serve", "-c", file, "--listen", addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{}) // closed once sluice has exited, waitErr set
	go func() { waitErr = cmd.Wait(); close(done) }()
	defer func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	var resp *http.Response
	deadline := time.Now().Add(time.Minute) // a bound on a hung start, not a figure asserted
	for {
		resp, err = http.Get("http://" + addr + "/any/path?q=1")
		if err == nil {
			break
		}
		select {
		case <-done:
			t.Fatalf("sluice exited: %v\n%s", waitErr, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice did not answer within a minute: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"pod":"lean-1","namespace":"ns"}`
	if resp.StatusCode != http.StatusOK || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("answer %s %q (%s), want 200 %q (application/json)", resp.Status, body, resp.Header.Get("Content-Type"), want)
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "lean-echo" {
		t.Errorf("the process is named %q (%v), want lean-echo", comm, err)
	}
	http.DefaultClient.CloseIdleConnections()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-done
	if waitErr != nil {
		t.Errorf("sluice exited with %v on SIGTERM, want 0\n%s", waitErr, log.String())
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestContainerEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "infra-backend-v1-abc", Namespace: "gateway-conformance-infra", UID: "u1"},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{PodIP: "10.244.0.7"},
	}
	volumes := map[string]string{"secret-volume": "/work/pods/u1/volumes/secret-volume"}
	k := &kubelet{}
	for _, tc := range []struct {
		name    string
		env     []corev1.EnvVar
		mounts  []corev1.VolumeMount
		want    []string
		wantErr string
	}{
		{
			name: "field refs",
			env: []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NAMESPACE", "metadata.namespace"),
				fieldEnv("IP", "status.podIP"), fieldEnv("NODE", "spec.nodeName")},
			want: []string{"POD_NAME=infra-backend-v1-abc", "NAMESPACE=gateway-conformance-infra", "IP=10.244.0.7", "NODE=" + nodeName},
		},
		{
			name:   "paths under a mounted secret are rewritten",
			env:    []corev1.EnvVar{{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"}, {Name: "OTHER", Value: "/etc/secret-volumes/crt"}, {Name: "GRPC_ECHO_SERVER", Value: "1"}},
			mounts: []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume/"}},
			want:   []string{"TLS_SERVER_CERT=/work/pods/u1/volumes/secret-volume/crt", "OTHER=/etc/secret-volumes/crt", "GRPC_ECHO_SERVER=1"},
		},
		{
			name:    "an unsupported field is an error",
			env:     []corev1.EnvVar{fieldEnv("X", "metadata.labels['a']")},
			wantErr: "not supported",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := corev1.Container{Env: tc.env, VolumeMounts: tc.mounts}
			got, err := k.containerEnv(context.Background(), pod, c, volumes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got[0], "PATH=") || !slices.Equal(got[1:], tc.want) {
				t.Errorf("env = %q, want PATH then %q", got, tc.want)
			}
		})
	}
}

func TestMaterialiseVolumes(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls-checks-certificate", Namespace: "ns"},
			Data: map[string][]byte{"crt": []byte("CERT"), "key": []byte("KEY"), "../escape": []byte("x")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"},
			Data: map[string]string{"a.conf": "A"}, BinaryData: map[string][]byte{"b.bin": {1, 2}}},
	)
	k := &kubelet{client: client}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tls-backend", Namespace: "ns"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "secret-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls-checks-certificate"}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}},
	}
	dir := t.TempDir()
	vols, err := k.materialiseVolumes(context.Background(), pod, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 2 || vols["scratch"] != "" {
		t.Fatalf("volumes = %v, want secret-volume and config only", vols)
	}
	for path, want := range map[string]string{
		filepath.Join(vols["secret-volume"], "crt"): "CERT",
		filepath.Join(vols["secret-volume"], "key"): "KEY",
		filepath.Join(vols["config"], "a.conf"):     "A",
		filepath.Join(vols["config"], "b.bin"):      "\x01\x02",
	} {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "volumes", "escape")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key with a slash was written: %v", err)
	}

	c := corev1.Container{
		Env:          []corev1.EnvVar{{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume"}},
	}
	env, err := k.containerEnv(context.Background(), pod, c, vols)
	if err != nil {
		t.Fatal(err)
	}
	cert := strings.TrimPrefix(env[1], "TLS_SERVER_CERT=")
	if got, err := os.ReadFile(cert); err != nil || string(got) != "CERT" {
		t.Errorf("TLS_SERVER_CERT=%s reads %q, %v; want CERT", cert, got, err)
	}

	pod.Spec.Volumes[0].Secret.SecretName = "missing"
	if _, err := k.materialiseVolumes(context.Background(), pod, t.TempDir()); err == nil || !strings.Contains(err.Error(), "secret-volume") {
		t.Errorf("a missing secret gave %v, want an error naming the volume", err)
	}
}

func TestDrainFor(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name          string
		deletion, pod *int64
		limit, want   time.Duration
	}{
		{"the default grace period, under the limit", nil, nil, 5 * time.Second, 5 * time.Second},
		{"the pod's grace period", nil, secs(2), 5 * time.Second, 2 * time.Second},
		{"the deletion's grace period first", secs(1), secs(2), 5 * time.Second, time.Second},
		{"a forced deletion", secs(0), secs(30), 5 * time.Second, 0},
		{"the limit", secs(60), nil, 5 * time.Second, 5 * time.Second},
		{"no drain", nil, nil, 0, 0},
		{"a negative grace period", secs(-1), nil, 5 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: tc.deletion},
				Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: tc.pod},
			}
			if got := drainFor(p, tc.limit); got != tc.want {
				t.Errorf("drainFor = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTerminate checks that a terminating pod's backend keeps running until
// its drain time is up, then stops, and that a terminating pod gets no
// backend started.
func TestTerminate(t *testing.T) {
	k := newKubelet(fake.NewClientset(), "/nonexistent/echo-basic", "", t.TempDir(), t.TempDir(), time.Hour)
	start := func(uid types.UID) *proc {
		t.Helper()
		cmd := exec.Command("sleep", "3600")
		pr, err := k.startProc("sleep-"+string(uid), cmd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stopProc(pr, time.Second) })
		k.backends[uid] = &backend{key: "ns/" + string(uid), dir: t.TempDir(), procs: []*proc{pr}}
		return pr
	}
	now := metav1.Now()
	grace := func(n int64) *int64 { return &n }

	long := start("long")
	k.terminate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "long", DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(30)}})
	k.terminate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "long"}}) // the object goes: no change
	short := start("short")
	k.terminate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "short", DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(0)}})
	select {
	case <-short.done:
	case <-time.After(time.Minute):
		t.Fatal("a pod deleted without grace period still has its backend after a minute")
	}
	select {
	case <-long.done:
		t.Fatalf("the backend of a pod with 30 s to drain stopped: %v", long.err)
	default:
	}
	k.mu.Lock()
	_, longKept := k.backends["long"]
	_, shortKept := k.backends["short"]
	k.mu.Unlock()
	if !longKept || shortKept {
		t.Errorf("backends kept: long %v, short %v; want long only", longKept, shortKept)
	}

	// The informer's resync of a terminating pod whose backend is gone
	// must not start a new one.
	k.sync(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "new", Name: "new", Namespace: "ns", DeletionTimestamp: &now},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "echo-basic"}}},
		Status:     corev1.PodStatus{PodIP: "10.244.0.9", Phase: corev1.PodRunning},
	})
	k.mu.Lock()
	_, started := k.backends["new"]
	k.mu.Unlock()
	if started {
		t.Error("a backend was started for a terminating pod")
	}
	k.stopAll()
	<-long.done
}
