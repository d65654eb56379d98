package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-gateway-cmd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sluice-gateway")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sluice-gateway:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

const manifests = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: sluice}
spec: {controllerName: sluice-server.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: sluice
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules: [{filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org}}]}]
`

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "help", args: []string{"--help"}, stdout: []string{"-admin-socket", "-address-pool", "-leader-elect", "-kubeconfig", "-translate"}},
		{name: "no socket", code: 2, stderr: []string{"--admin-socket is required"}},
		{name: "bad pool", args: []string{"--admin-socket", "/x", "--address-pool", "10.0.0.0"}, code: 2, stderr: []string{"--address-pool: want a CIDR"}},
		{name: "argument", args: []string{"x"}, code: 2, stderr: []string{`unexpected argument "x"`}},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: []string{"-nope"}},
		{name: "translate", stdin: manifests, args: []string{"--translate", "-", "--address-pool", "10.9.0.0/24"}, stdout: []string{"- 10.9.0.1:80", "redirect:", "http://example.org$path$query"}},
		{name: "translate bad", stdin: "kind: Pod\napiVersion: v1\n", args: []string{"--translate", "-"}, code: 1, stderr: []string{"document 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.stdin, c.args...)
			if code != c.code {
				t.Errorf("exit status %d, want %d; stderr %s", code, c.code, stderr)
			}
			for _, s := range c.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// SIGTERM stops the controller cleanly, exit status 0, even while it
// cannot reach the cluster.
func TestShutdown(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600)
	cmd := exec.Command(binary, "--kubeconfig", kubeconfig, "--admin-socket", filepath.Join(dir, "admin.sock"))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sluicetest.WaitFor(t, "the controller starting", func() bool { return strings.Contains(stderr.String(), "waiting for the informers' caches") })
	cmd.Process.Signal(syscall.SIGTERM)
	var err error
	sluicetest.WaitFor(t, "the controller exiting", func() bool {
		select {
		case err = <-exited:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Errorf("after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
}
