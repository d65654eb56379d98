//go:build conformance

package conformance

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwconformance "sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/sluice-server/sluice/sluicetest"
)

const (
	// insideEnv marks the run of TestConformance that kubecluster starts
	// inside the cluster's network namespace; its value is the directory
	// holding the sluice and sluice-gateway binaries.
	insideEnv = "SLUICE_CONFORMANCE_INSIDE"
	// logsEnv names the directory the inner run writes the data plane's
	// and the controller's logs to.
	logsEnv = "SLUICE_CONFORMANCE_LOGS"

	className      = "sluice"
	controllerName = "sluice-server.dev/gateway-controller"
	// pool is the Gateways' address pool. It is routed to the cluster's
	// network namespace (kubecluster uses 10.244.0.0/24 for pods and
	// 10.245.0.1 for the node).
	pool = "10.246.0.0/24"
)

// TestConformance runs the Gateway API conformance suite against
// sluice-gateway and a Sluice data plane. It builds both, then starts
// kubecluster, which runs this test binary again inside the cluster's
// network namespace (see inside), and fails when the inner run fails.
func TestConformance(t *testing.T) {
	if bin := os.Getenv(insideEnv); bin != "" {
		inside(t, bin, os.Getenv(logsEnv))
		return
	}
	runInCluster(t, "TestConformance")
}

// needCluster returns the directory of tools/kube/build.sh's binaries, or
// skips the test, saying why, when SLUICE_CONFORMANCE=1 is not set; when
// it is, a missing binary, etcd or root skips the test too, or fails it
// under CI (CI=1), where .ci/run has provided them.
func needCluster(t *testing.T) string {
	t.Helper()
	if os.Getenv("SLUICE_CONFORMANCE") != "1" {
		t.Skip("set SLUICE_CONFORMANCE=1 to run the tests in a Kubernetes cluster (root, etcd and tools/kube/build.sh's binaries needed)")
	}
	missing := t.Skipf
	if os.Getenv("CI") != "" {
		missing = t.Fatalf
	}
	cache := os.Getenv("SLUICE_KUBE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "sluice", "kube-v1.37.2")
	}
	for _, b := range []string{"kube-apiserver", "kubecluster", "echo-basic", "kwok"} {
		if _, err := os.Stat(filepath.Join(cache, "bin", b)); err != nil {
			missing("%s not built in %s: run tools/kube/build.sh first (several minutes cold)", b, cache)
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		missing("etcd not on PATH: apt-get install -y etcd-server")
	}
	if os.Geteuid() != 0 {
		missing("kubecluster needs root to make network namespaces")
	}
	return cache
}

// runInCluster builds sluice and sluice-gateway, starts kubecluster, which
// runs the test name of this binary again inside the cluster's network
// namespace, and fails when that inner run does not pass.
func runInCluster(t *testing.T, name string) {
	cache := needCluster(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	build(t, "../..", filepath.Join(bin, "sluice"), "./cmd/sluice")
	build(t, "..", filepath.Join(bin, "sluice-gateway"), "./cmd/sluice-gateway")

	logs := os.Getenv(logsEnv)
	if logs == "" {
		logs = filepath.Join(tmp, "logs")
	}
	if name != "TestConformance" {
		logs = filepath.Join(logs, name)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	logs, _ = filepath.Abs(logs)

	cmd := exec.Command(filepath.Join(cache, "bin", "kubecluster"), "-cache", cache,
		"-kubeconfig", filepath.Join(tmp, "kubeconfig"), "-workdir", filepath.Join(tmp, "work"),
		"-logs", filepath.Join(logs, "cluster"), "-timeout", "5m",
		"-sluice", filepath.Join(bin, "sluice"), // the backend of image sluice-test/lean-echo
		"--", os.Args[0])
	cmd.Args = append(cmd.Args, innerArgs(t, name)...)
	cmd.Env = append(os.Environ(), insideEnv+"="+bin, logsEnv+"="+logs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &tail{}
	cmd.Stdout = io.MultiWriter(os.Stdout, out)
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	t.Logf("logs of the data plane, the controller and the cluster: %s", logs)
	if err != nil {
		t.Fatalf("kubecluster: %v\n%s", err, logTails(logs))
	}
	if !strings.Contains(out.String(), "--- PASS: "+name+" ") {
		t.Fatalf("kubecluster exited 0 without a passing inner run")
	}
}

// innerArgs is the command line of the inner run of the test name: this
// run's flags (the suite's among them) less the ones that would make the
// two runs share a file, with the test selected and, for TestConformance,
// the suite's report and implementation version set when they are not.
func innerArgs(t *testing.T, name string) []string {
	var args []string
	for _, a := range os.Args[1:] {
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		switch name {
		case "test.testlogfile", "test.run", "test.coverprofile", "test.cpuprofile", "test.memprofile", "test.gocoverdir":
			continue
		}
		args = append(args, a)
	}
	args = append(args, "-test.run=^"+name+"$")
	if name != "TestConformance" {
		return args
	}
	report := flag.Lookup("report-output").Value.String()
	if report == "" {
		report = filepath.Join(os.TempDir(), "sluice-conformance-report.yaml")
	}
	report, _ = filepath.Abs(report)
	args = append(args, "-report-output="+report)
	t.Logf("the suite's report goes to %s", report)
	if flag.Lookup("version").Value.String() == "" {
		version := "dev"
		if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
			version = strings.TrimSpace(string(out))
		}
		args = append(args, "-version="+version)
	}
	return args
}

// build builds a command of the module in dir into out.
func build(t *testing.T, dir, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// inside runs in the cluster's network namespace: it starts the data plane
// and the controller, and runs the suite.
func inside(t *testing.T, bin, logs string) {
	socket, state, dir := startDataPlane(t, bin, logs)

	opts := gwconformance.DefaultOptions(t)
	gc := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}
	if err := opts.Client.Create(context.Background(), gc); err != nil {
		t.Fatalf("creating the GatewayClass: %v", err)
	}
	startController(t, bin, logs, socket, state, dir)

	// The suite reads the features to test from the GatewayClass's status,
	// which the controller writes once its caches have synced.
	waitLong(t, "the GatewayClass "+className+" to list supportedFeatures in its status (see "+filepath.Join(logs, "sluice-gateway.log")+")", time.Minute, func() (bool, error) {
		err := opts.Client.Get(context.Background(), types.NamespacedName{Name: className}, gc)
		return err == nil && len(gc.Status.SupportedFeatures) > 0, err
	})

	opts.GatewayClassName = className
	if len(opts.ConformanceProfiles) == 0 {
		opts.ConformanceProfiles = []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName}
	}
	impl := &opts.Implementation
	impl.Organization = cmp.Or(impl.Organization, "sluice-server")
	impl.Project = cmp.Or(impl.Project, "sluice")
	impl.URL = cmp.Or(impl.URL, "https://github.com/sluice-server/sluice")
	if len(impl.Contact) == 0 {
		impl.Contact = []string{"sluice maintainers"}
	}
	gwconformance.RunConformanceWithOptions(t, opts)
}

// startDataPlane routes the Gateways' address pool to this network
// namespace and starts `sluice serve` on a config with an admin socket and
// a 404, as the deployment's ConfigMap has it, logging to logs. It returns
// the admin socket, its state file and the config's directory.
func startDataPlane(t *testing.T, bin, logs string) (socket, state, dir string) {
	t.Helper()
	if out, err := exec.Command("ip", "route", "add", "local", pool, "dev", "lo", "table", "local").CombinedOutput(); err != nil {
		t.Fatalf("routing the address pool %s to this namespace: %v: %s", pool, err, out)
	}
	dir = t.TempDir()
	socket = filepath.Join(dir, "admin.sock")
	state = filepath.Join(dir, "state.json")
	cfg := fmt.Sprintf("admin: {socket: %s, state: %s}\nlisten: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{text: {status: 404, body: \"\"}}]}]\n", socket, state)
	file := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, filepath.Join(logs, "sluice.log"), filepath.Join(bin, "sluice"), "serve", "-c", file)
	sluicetest.WaitFor(t, "the data plane's admin socket", func() bool {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return socket, state, dir
}

// startController starts sluice-gateway beside the data plane of
// startDataPlane, on the cluster of $KUBECONFIG, logging to logs.
func startController(t *testing.T, bin, logs, socket, state, dir string) {
	t.Helper()
	start(t, filepath.Join(logs, "sluice-gateway.log"), filepath.Join(bin, "sluice-gateway"),
		"--kubeconfig", os.Getenv("KUBECONFIG"), "--admin-socket", socket, "--admin-state", state,
		"--config-dir", dir, "--address-pool", pool, "--controller-name", controllerName)
}

// start runs a command until the test ends, its output in logFile.
func start(t *testing.T, logFile, name string, args ...string) {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-done:
			t.Errorf("%s exited before the suite ended: %v (log: %s)", filepath.Base(name), err, logFile)
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			<-done
		}
		f.Close()
	})
}

// tail keeps what is written to it, for the checks after kubecluster exits.
type tail struct{ strings.Builder }

// logTails returns the end of each log in dir and its subdirectories.
func logTails(dir string) string {
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	var sb strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&sb, "== %s\n%s\n", f, strings.Join(lines, "\n"))
	}
	return sb.String()
}
