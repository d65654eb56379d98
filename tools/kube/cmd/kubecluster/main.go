// Command kubecluster runs a whole Kubernetes control plane on loopback for
// tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok simulating one node, with the Gateway API CRDs installed. It writes an
// admin kubeconfig, prints "ready kubeconfig=PATH" when everything is up, and
// stays up until SIGINT or SIGTERM, then stops every process it started and
// removes its work directory.
//
// By default it runs in a network namespace of its own, where the pod
// network 10.244.0.0/24 is routed to this host, and a test-only kubelet runs
// the Gateway API conformance suite's echo-basic server for every pod that
// asks for that image, and, given -sluice, sluice answering a small fixed
// body for every pod of the image sluice-test/lean-echo, each in its own
// network namespace holding the pod's IP. Programs that talk to the
// cluster must run in the same network namespace: name them after "--"
// and kubecluster runs them once the cluster is ready, with KUBECONFIG
// set, and exits with their status.
//
// The binaries come from tools/kube/build.sh.
//
// Usage:
//
//	kubecluster -kubeconfig PATH [flags] [-- command args...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	podCIDR     = "10.244.0.0/24"
	serviceCIDR = "10.96.0.0/16"
	// nodeIP is the simulated node's address and the source address the
	// host side uses towards pods; it is outside the pod CIDR so kwok never
	// hands it to a pod.
	nodeIP   = "10.245.0.1"
	nodeName = "kwok-node-0"
)

type options struct {
	cache      string
	kubeconfig string
	netns      string
	workdir    string
	keepLogs   string
	channel    string
	sluice     string
	backends   bool
	drain      time.Duration
	timeout    time.Duration
	command    []string
}

func main() {
	var o options
	defCache := os.Getenv("SLUICE_KUBE_CACHE")
	if defCache == "" {
		home, _ := os.UserHomeDir()
		defCache = filepath.Join(home, ".cache", "sluice", "kube-v1.37.2")
	}
	flag.StringVar(&o.cache, "cache", defCache, "`dir` build.sh built into (bin/ and share/)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "`path` to write the admin kubeconfig to (required)")
	flag.StringVar(&o.netns, "netns", "new", "`mode`: new (make a network namespace and run in it) or current (the current one is already dedicated to this cluster)")
	flag.StringVar(&o.workdir, "workdir", "", "work `dir` to create (must not exist); removed on exit; default a new temp dir")
	flag.StringVar(&o.keepLogs, "logs", "", "copy the process logs into `dir` on exit")
	flag.StringVar(&o.channel, "gateway-channel", "standard", "Gateway API CRD `channel`: standard or experimental")
	flag.StringVar(&o.sluice, "sluice", "", "`path` of the sluice binary the test kubelet runs for pods of image "+leanImage+" (each answers every request 200 with {\"pod\":NAME,\"namespace\":NAMESPACE}); without it such pods serve nothing")
	flag.BoolVar(&o.backends, "backends", true, "run echo-basic for pods whose image is echo-basic, and -sluice's binary for those of "+leanImage+" (the test-only kubelet)")
	flag.DurationVar(&o.drain, "drain", 5*time.Second, "how long a deleted pod's backend keeps serving, at most (its grace period if shorter): as a server that drains would, while its endpoint is terminating")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long startup may take")
	flag.Parse()
	o.command = flag.Args()
	if o.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "kubecluster: -kubeconfig is required")
		flag.Usage()
		os.Exit(2)
	}
	if o.channel != "standard" && o.channel != "experimental" {
		fmt.Fprintf(os.Stderr, "kubecluster: -gateway-channel %q: write standard or experimental\n", o.channel)
		os.Exit(2)
	}
	if os.Getenv(childEnv) != "" {
		os.Unsetenv(childEnv)
		o.netns = "current"
	}
	switch o.netns {
	case "new":
		os.Exit(reexecInNetns())
	case "current":
	default:
		fmt.Fprintf(os.Stderr, "kubecluster: -netns %q: write new or current\n", o.netns)
		os.Exit(2)
	}
	code, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubecluster:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// childEnv marks the copy of kubecluster that reexecInNetns starts in the
// new network namespace.
const childEnv = "KUBECLUSTER_NETNS_CHILD"

// reexecInNetns runs this program again, with the same arguments, in a new
// network namespace, relays SIGINT and SIGTERM to it and returns its exit
// code.
func reexecInNetns() int {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "kubecluster: cannot make a network namespace (needs root or CAP_SYS_ADMIN; or run inside one with -netns=current): %v\n", err)
		return 1
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		return 1
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubecluster:", err)
		return 1
	}
	return 0
}

// setupNetwork brings lo up, gives it the node address and routes the pod
// CIDR to this host, in the current network namespace.
func setupNetwork() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "replace", nodeIP + "/32", "dev", "lo"},
		{"route", "replace", "local", podCIDR, "dev", "lo", "table", "local"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func run(o options) (int, error) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	if err := setupNetwork(); err != nil {
		return 1, err
	}
	bin := filepath.Join(o.cache, "bin")
	share := filepath.Join(o.cache, "share")
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "echo-basic"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return 1, fmt.Errorf("%s is missing from %s: run tools/kube/build.sh first", b, bin)
		}
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return 1, errors.New("etcd not found on PATH: install it with apt-get install -y etcd-server")
	}

	dir := o.workdir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kubecluster-"); err != nil {
			return 1, err
		}
	} else if err := os.Mkdir(dir, 0o700); err != nil {
		return 1, fmt.Errorf("-workdir: %w (it must not exist; kubecluster removes it on exit)", err)
	}
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		return 1, err
	}
	sup := newSupervisor(logDir)
	var kl *kubelet
	defer func() {
		if kl != nil {
			kl.stopAll()
		}
		sup.stopAll(10 * time.Second)
		if o.keepLogs != "" {
			_ = os.MkdirAll(o.keepLogs, 0o755)
			_ = exec.Command("cp", "-r", logDir+"/.", o.keepLogs).Run()
		}
		_ = os.RemoveAll(dir)
	}()

	lean := ""
	if o.backends && o.sluice != "" {
		if lean, err = leanBinary(filepath.Join(dir, "bin"), o.sluice); err != nil {
			return 1, err
		}
	}

	c := &cluster{o: o, dir: dir, bin: bin, share: share, etcd: etcdBin, sup: sup}
	startCtx, startCancel := context.WithTimeout(ctx, o.timeout)
	err = c.start(startCtx)
	startCancel()
	if err != nil {
		return 1, err
	}
	if o.backends {
		kl = newKubelet(c.client, filepath.Join(bin, "echo-basic"), lean, filepath.Join(dir, "pods"), logDir, o.drain)
		go kl.run(ctx)
	}
	fmt.Printf("ready kubeconfig=%s\n", o.kubeconfig)

	var cmdDone chan error
	if len(o.command) > 0 {
		cmd := exec.CommandContext(ctx, o.command[0], o.command[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), "KUBECONFIG="+o.kubeconfig)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			return 1, err
		}
		cmdDone = make(chan error, 1)
		go func() { cmdDone <- cmd.Wait() }()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "kubecluster: stopping")
		if cmdDone != nil {
			<-cmdDone
		}
		return 0, nil
	case p := <-sup.died:
		if ctx.Err() != nil {
			return 0, nil // a signal reached it too
		}
		return 1, fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail(20))
	case err := <-cmdDone:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return max(ee.ExitCode(), 1), nil
		}
		if err != nil {
			return 1, err
		}
		return 0, nil
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago
// and that no earlier call returned: the kernel may hand a port it just
// handed out again once it is closed, and two components told one port
// (the controller manager and the scheduler did) leave one unable to
// listen.
func freePort() (int, error) {
	givenPorts.Lock()
	defer givenPorts.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !givenPorts.m[port] {
			givenPorts.m[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no port found that was not handed out before")
}

// givenPorts are the ports freePort returned.
var givenPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}
