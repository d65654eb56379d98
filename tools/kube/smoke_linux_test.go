package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// insideEnv marks the run of TestSmoke that kubecluster starts inside its
// network namespace.
const insideEnv = "SLUICE_KUBE_SMOKE_INSIDE"

// TestSmoke starts kubecluster, which runs this test binary again inside
// the cluster's network namespace (see smokeInside), and checks that the
// inner run passed and that kubecluster left no process or file behind.
func TestSmoke(t *testing.T) {
	if os.Getenv(insideEnv) != "" {
		smokeInside(t)
		return
	}
	cache := os.Getenv("SLUICE_KUBE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "sluice", "kube-v1.37.2")
	}
	if _, err := os.Stat(filepath.Join(cache, "bin", "kube-apiserver")); err != nil {
		t.Skipf("control plane binaries not built in %s: run tools/kube/build.sh first (several minutes cold)", cache)
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd not on PATH: apt-get install -y etcd-server")
	}
	if os.Geteuid() != 0 {
		t.Skip("kubecluster needs root to make network namespaces")
	}
	tmp := t.TempDir()
	kc := filepath.Join(tmp, "kubecluster")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", kc, "./cmd/kubecluster").CombinedOutput(); err != nil {
		t.Fatalf("go build kubecluster: %v\n%s", err, out)
	}
	work := filepath.Join(tmp, "work")
	logs := filepath.Join(tmp, "logs")
	cmd := exec.Command(kc, "-cache", cache, "-kubeconfig", filepath.Join(tmp, "kubeconfig"),
		"-workdir", work, "-logs", logs,
		"--", os.Args[0], "-test.run=^TestSmoke$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), insideEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubecluster: %v\n%s%s", err, out, logTails(logs))
	}
	if !strings.Contains(string(out), "ready kubeconfig=") || !strings.Contains(string(out), "--- PASS: TestSmoke") {
		t.Fatalf("kubecluster exited 0 without a ready line and a passing inner run:\n%s", out)
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir %s still there after exit (stat: %v)", work, err)
	}
	if left := processesUnder(work); len(left) > 0 {
		t.Errorf("processes outlived kubecluster: %v", left)
	}
}

// logTails returns the end of each log kubecluster saved, for failures.
func logTails(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var sb strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&sb, "== %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return sb.String()
}

// processesUnder lists the processes whose command line or working
// directory names a path under dir.
func processesUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", pid, "cwd"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) {
			found = append(found, pid+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// waitFor polls cond until it returns nil or the test's time runs out,
// and fails the test with cond's last error then.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Before(deadline) {
		deadline = d.Add(-5 * time.Second)
	}
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// smokeInside runs in the cluster's network namespace: it deploys two
// echo-basic replicas behind a Service, checks that each pod's address
// answers with the pod's own name, then scales to zero and checks that the
// backends stop.
func smokeInside(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns, name = "smoke", "echo"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the default service account in "+ns, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	labels := map[string]string{"app": name}
	replicas := int32(2)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "echo",
					Image: "registry.k8s.io/gateway-api/echo-basic:v1.6.0",
					Ports: []corev1.ContainerPort{{ContainerPort: 3000}},
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(3000)}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var pods []corev1.Pod
	waitFor(t, "2 Ready pods", func() error {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range l.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
					pods = append(pods, p)
				}
			}
		}
		if len(pods) != 2 {
			return fmt.Errorf("%d of %d pods Ready", len(pods), len(l.Items))
		}
		return nil
	})
	waitFor(t, "an EndpointSlice with 2 ready addresses", func() error {
		l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					for _, a := range e.Addresses {
						ready[a] = true
					}
				}
			}
		}
		for _, p := range pods {
			if !ready[p.Status.PodIP] {
				return fmt.Errorf("pod %s (%s) not among the ready addresses %v", p.Name, p.Status.PodIP, ready)
			}
		}
		return nil
	})

	hc := &http.Client{Timeout: 5 * time.Second}
	for _, p := range pods {
		url := "http://" + net.JoinHostPort(p.Status.PodIP, "3000") + "/smoke"
		waitFor(t, "echo-basic at "+url, func() error {
			resp, err := hc.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			var echo struct {
				Path      string `json:"path"`
				Namespace string `json:"namespace"`
				Pod       string `json:"pod"`
			}
			if err := json.Unmarshal(body, &echo); err != nil {
				return fmt.Errorf("%s: %v: %s", resp.Status, err, body)
			}
			if echo.Pod != p.Name || echo.Namespace != ns || echo.Path != "/smoke" {
				t.Fatalf("GET %s answered %+v, want pod %s in %s, path /smoke", url, echo, p.Name, ns)
			}
			return nil
		})
	}

	// A patch, not a read-modify-write of the scale, which the deployment
	// controller's status updates could make conflict.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pods to go", func() error {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d pods left", len(l.Items))
		}
		return nil
	})
	for _, p := range pods {
		addr := net.JoinHostPort(p.Status.PodIP, "3000")
		waitFor(t, "the backend at "+addr+" to stop", func() error {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return nil
			}
			c.Close()
			return fmt.Errorf("%s still accepts connections", addr)
		})
	}
}
