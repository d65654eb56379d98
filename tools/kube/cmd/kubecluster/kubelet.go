package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kubelet is the test-only kubelet: for every pod on the kwok node with a
// container whose image is echo-basic or lean-echo (leanImage), it runs
// the echo-basic binary, or sluice answering a fixed body (leanConfig),
// in a network namespace of its own that holds the pod's IP, joined to
// this namespace by a veth pair, so the pod really serves on its address
// and ports, from when the pod has its address until it ends, or, once it
// is being deleted, until its drain time is up (see podRunnable and
// drainFor). Other images are left alone: their pods are Ready but serve
// nothing.
type kubelet struct {
	client  kubernetes.Interface
	echo    string // path of the echo-basic binary
	lean    string // path of the sluice binary run for lean-echo containers, "" for none
	podsDir string // per-pod files: materialised secret and config map volumes
	logDir  string
	drain   time.Duration // the most a terminating pod's backend keeps serving
	log     *log.Logger

	mu       sync.Mutex
	backends map[types.UID]*backend
	nextLink int
	stopped  bool
}

var errShuttingDown = errors.New("shutting down")

// backend is one pod's running backend processes (echo-basic or sluice).
type backend struct {
	key   string // namespace/name, for logs
	ip    string
	dir   string
	procs []*proc
	// stopAt is when a terminating pod's backend is stopped; zero while
	// the pod is not being deleted. Guarded by the kubelet's mu.
	stopAt time.Time
}

// newKubelet returns a kubelet running echo for echo-basic containers and
// lean (see leanBinary; "" if none) for lean-echo ones, writing pods' files
// under podsDir and logs under logDir. Its methods are safe for concurrent
// use.
func newKubelet(client kubernetes.Interface, echo, lean, podsDir, logDir string, drain time.Duration) *kubelet {
	lf, err := os.OpenFile(filepath.Join(logDir, "kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	var l *log.Logger
	if err != nil {
		l = log.New(os.Stderr, "kubelet: ", log.LstdFlags)
	} else {
		l = log.New(lf, "", log.LstdFlags|log.Lmicroseconds)
	}
	return &kubelet{client: client, echo: echo, lean: lean, podsDir: podsDir, logDir: logDir, drain: drain, log: l,
		backends: map[types.UID]*backend{}}
}

// leanImage is the image of the lean backend: a container of this image
// (with any tag or digest, under any registry) is served by sluice
// answering every request 200 with a small JSON body naming its pod (see
// leanConfig), a backend far cheaper a request than echo-basic, for load
// tests whose backend must not be what limits the rate.
const leanImage = "sluice-test/lean-echo"

// imageName returns image without its tag or digest.
func imageName(image string) string {
	name := image
	if i := strings.LastIndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name
}

// isEchoImage reports whether image is the conformance suite's echo-basic.
func isEchoImage(image string) bool {
	name := imageName(image)
	return name == "echo-basic" || strings.HasSuffix(name, "/echo-basic")
}

// isLeanImage reports whether image is leanImage.
func isLeanImage(image string) bool {
	name := imageName(image)
	return name == leanImage || strings.HasSuffix(name, "/"+leanImage)
}

// leanBinary makes the name the kubelet runs sluice by for lean-echo
// containers: a symbolic link dir/lean-echo to the sluice binary, so that
// the backends' processes are named lean-echo (their comm in /proc) apart
// from a data plane that is sluice too. It returns the link's path.
func leanBinary(dir, sluice string) (string, error) {
	abs, err := filepath.Abs(sluice)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("-sluice: %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("-sluice: %s is not an executable file", abs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(dir, "lean-echo")
	if err := os.Symlink(abs, link); err != nil {
		return "", err
	}
	return link, nil
}

// leanConfig returns the sluice config (JSON, which YAML reads) of the
// lean-echo container c of pod p: it listens on each TCP port the
// container lists, on every address of the pod's network namespace (the
// pod's IP and loopback, as a real pod's server bound to 0.0.0.0 does;
// the process starts before the pod's IP is put in its namespace), and
// answers every request 200 with {"pod":NAME,"namespace":NAMESPACE},
// application/json; no access log, no request IDs, its own log at warn;
// user root, as kubecluster runs as root. A container listing no TCP port
// is an error.
func leanConfig(p *corev1.Pod, c corev1.Container) ([]byte, error) {
	var listen []string
	seen := map[int32]bool{}
	for _, cp := range c.Ports {
		if (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) && !seen[cp.ContainerPort] {
			seen[cp.ContainerPort] = true
			listen = append(listen, ":"+strconv.Itoa(int(cp.ContainerPort)))
		}
	}
	if len(listen) == 0 {
		return nil, fmt.Errorf("container %s lists no TCP port: a %s container serves on the ports it lists (ports: [{containerPort: 3000}])", c.Name, leanImage)
	}
	body, err := json.Marshal(struct {
		Pod       string `json:"pod"`
		Namespace string `json:"namespace"`
	}{p.Name, p.Namespace})
	if err != nil {
		return nil, err
	}
	type obj = map[string]any
	cfg := obj{
		"listen":     listen,
		"user":       "root",
		"log":        obj{"level": "warn"},
		"request_id": false,
		"routes": []obj{{
			"match":    "/",
			"pipeline": []obj{{"text": obj{"body": string(body), "content_type": "application/json"}}},
		}},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// run watches the pods bound to the kwok node until ctx ends.
func (k *kubelet) run(ctx context.Context) {
	// The resync retries pods whose start failed, such as one whose
	// secret volume was not there yet.
	f := informers.NewSharedInformerFactoryWithOptions(k.client, 2*time.Second,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
		}))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.sync(ctx, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				k.terminate(p)
			}
		},
	})
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}

// podRunnable reports whether a pod's containers would be running on a
// real node: from when it has an address (kwok's pod-create stage gives it
// one a moment before its pod-ready stage makes it Ready, so the backend
// listens before the pod enters its Service's endpoints) until it ends. A
// pod being deleted is drained (see drainFor) rather than stopped at once.
func podRunnable(p *corev1.Pod) bool {
	return p.Status.PodIP != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (k *kubelet) sync(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	var served []corev1.Container
	for _, c := range p.Spec.Containers {
		if isEchoImage(c.Image) || isLeanImage(c.Image) {
			served = append(served, c)
		}
	}
	if len(served) == 0 {
		return
	}
	if !podRunnable(p) {
		k.stop(p.UID)
		return
	}
	if p.DeletionTimestamp != nil {
		k.terminate(p) // and never start a terminating pod's backend
		return
	}
	k.mu.Lock()
	_, running := k.backends[p.UID]
	k.mu.Unlock()
	if running {
		return
	}
	b, err := k.start(ctx, p, served)
	if errors.Is(err, errShuttingDown) {
		return
	}
	if err != nil {
		k.log.Printf("pod %s/%s: %v", p.Namespace, p.Name, err)
		return
	}
	k.log.Printf("pod %s/%s: backend serving on %s (phase %s, Ready %v)", p.Namespace, p.Name, b.ip, p.Status.Phase, podReady(p))
}

// command returns the command line of a backend for container c of pod p:
// echo-basic, or for a lean-echo container sluice on a config of
// leanConfig written into dir.
func (k *kubelet) command(p *corev1.Pod, c corev1.Container, dir string) ([]string, error) {
	if !isLeanImage(c.Image) {
		return []string{k.echo}, nil
	}
	if k.lean == "" {
		return nil, fmt.Errorf("image %s needs the sluice binary: start kubecluster with -sluice PATH", c.Image)
	}
	cfg, err := leanConfig(p, c)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "lean-"+c.Name+".yaml")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		return nil, err
	}
	return []string{k.lean, "serve", "-c", file}, nil
}

// start runs a backend for each of the pod's echo-basic and lean-echo
// containers, all in one new network namespace, and wires the pod IP into
// it.
func (k *kubelet) start(ctx context.Context, p *corev1.Pod, containers []corev1.Container) (*backend, error) {
	ip := net.ParseIP(p.Status.PodIP)
	_, cidr, _ := net.ParseCIDR(podCIDR)
	if ip == nil || !cidr.Contains(ip) {
		return nil, fmt.Errorf("pod IP %q is not in %s", p.Status.PodIP, podCIDR)
	}
	dir := filepath.Join(k.podsDir, string(p.UID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b := &backend{key: p.Namespace + "/" + p.Name, ip: ip.String(), dir: dir}
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return nil, errShuttingDown
	}
	k.backends[p.UID] = b
	link := k.nextLink
	k.nextLink++
	k.mu.Unlock()
	fail := func(err error) (*backend, error) {
		k.stop(p.UID)
		return nil, err
	}
	volumes, err := k.materialiseVolumes(ctx, p, dir)
	if err != nil {
		return fail(err)
	}
	for i, c := range containers {
		env, err := k.containerEnv(ctx, p, c, volumes)
		if err != nil {
			return fail(fmt.Errorf("container %s: %w", c.Name, err))
		}
		argv, err := k.command(p, c, dir)
		if err != nil {
			return fail(fmt.Errorf("container %s: %w", c.Name, err))
		}
		name := fmt.Sprintf("pod-%s-%s-%s", p.Namespace, p.Name, c.Name)
		var cmd *exec.Cmd
		attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if i == 0 {
			cmd = exec.Command(argv[0], argv[1:]...)
			attr.Cloneflags = syscall.CLONE_NEWNET
		} else {
			cmd = exec.Command("nsenter", append([]string{"-t", strconv.Itoa(b.procs[0].cmd.Process.Pid), "-n", "--"}, argv...)...)
		}
		cmd.SysProcAttr = attr
		cmd.Env = env
		cmd.Dir = dir
		pr, err := k.startProc(name, cmd)
		if err != nil {
			return fail(err)
		}
		b.procs = append(b.procs, pr)
		go func(uid types.UID) {
			<-pr.done
			k.mu.Lock()
			cur, ok := k.backends[uid]
			k.mu.Unlock()
			if ok && cur == b {
				// An unexpected exit: forget the pod so a later resync of
				// it starts a new backend.
				k.log.Printf("pod %s: %s exited: %v", b.key, pr.name, pr.err)
				k.stop(uid)
			}
		}(p.UID)
		if i == 0 {
			if err := wirePod(pr.cmd.Process.Pid, link, b.ip); err != nil {
				return fail(err)
			}
		}
	}
	return b, nil
}

// wirePod joins the network namespace of process pid to this one with a
// veth pair: the pod side is eth0 holding ip, this side routes ip to it.
func wirePod(pid, link int, ip string) error {
	host, peer := fmt.Sprintf("kv%d", link), fmt.Sprintf("kp%d", link)
	ns := strconv.Itoa(pid)
	for _, args := range [][]string{
		{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", ns},
		{"ip", "link", "set", host, "up"},
		// The local table routes the whole pod CIDR to this host; this more
		// specific route sends the pod's own address to its namespace.
		{"ip", "route", "replace", ip + "/32", "dev", host, "src", nodeIP, "table", "local"},
		{"nsenter", "-t", ns, "-n", "ip", "link", "set", "lo", "up"},
		{"nsenter", "-t", ns, "-n", "ip", "link", "set", peer, "name", "eth0"},
		{"nsenter", "-t", ns, "-n", "ip", "addr", "add", ip + "/32", "dev", "eth0"},
		{"nsenter", "-t", ns, "-n", "ip", "link", "set", "eth0", "up"},
		{"nsenter", "-t", ns, "-n", "ip", "route", "add", "default", "dev", "eth0"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func (k *kubelet) startProc(name string, cmd *exec.Cmd) (*proc, error) {
	logPath := filepath.Join(k.logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// materialiseVolumes writes the pod's secret and config map volumes under
// dir and returns each volume's local directory by volume name.
func (k *kubelet) materialiseVolumes(ctx context.Context, p *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range p.Spec.Volumes {
		var data map[string][]byte
		switch {
		case v.Secret != nil:
			s, err := k.client.CoreV1().Secrets(p.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data = s.Data
		case v.ConfigMap != nil:
			cm, err := k.client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data = map[string][]byte{}
			for key, val := range cm.Data {
				data[key] = []byte(val)
			}
			for key, val := range cm.BinaryData {
				data[key] = val
			}
		default:
			continue
		}
		vdir := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return nil, err
		}
		for key, val := range data {
			if strings.Contains(key, "/") || key == ".." {
				continue
			}
			if err := os.WriteFile(filepath.Join(vdir, key), val, 0o600); err != nil {
				return nil, err
			}
		}
		out[v.Name] = vdir
	}
	return out, nil
}

// containerEnv resolves a container's environment the way a kubelet does
// for the sources echo-basic's manifests use, and rewrites values that name
// files under a mounted volume to where the volume was written.
func (k *kubelet) containerEnv(ctx context.Context, p *corev1.Pod, c corev1.Container, volumes map[string]string) ([]string, error) {
	type mount struct{ path, local string }
	var mounts []mount
	for _, m := range c.VolumeMounts {
		if local, ok := volumes[m.Name]; ok {
			mounts = append(mounts, mount{filepath.Clean(m.MountPath), filepath.Join(local, m.SubPath)})
		}
	}
	// Longest mount path first, so nested mounts win.
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].path) > len(mounts[j].path) })
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		val := e.Value
		if e.ValueFrom != nil {
			var err error
			if val, err = k.envFrom(ctx, p, e.ValueFrom); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		for _, m := range mounts {
			if val == m.path || strings.HasPrefix(val, m.path+"/") {
				val = m.local + strings.TrimPrefix(val, m.path)
				break
			}
		}
		env = append(env, e.Name+"="+val)
	}
	return env, nil
}

func (k *kubelet) envFrom(ctx context.Context, p *corev1.Pod, src *corev1.EnvVarSource) (string, error) {
	switch {
	case src.FieldRef != nil:
		switch src.FieldRef.FieldPath {
		case "metadata.name":
			return p.Name, nil
		case "metadata.namespace":
			return p.Namespace, nil
		case "metadata.uid":
			return string(p.UID), nil
		case "spec.nodeName":
			return p.Spec.NodeName, nil
		case "spec.serviceAccountName":
			return p.Spec.ServiceAccountName, nil
		case "status.podIP":
			return p.Status.PodIP, nil
		case "status.hostIP":
			return p.Status.HostIP, nil
		}
		return "", fmt.Errorf("field %q is not supported by the test kubelet", src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		s, err := k.client.CoreV1().Secrets(p.Namespace).Get(ctx, src.SecretKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(s.Data[src.SecretKeyRef.Key]), nil
	case src.ConfigMapKeyRef != nil:
		cm, err := k.client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, src.ConfigMapKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cm.Data[src.ConfigMapKeyRef.Key], nil
	}
	return "", fmt.Errorf("this value source is not supported by the test kubelet")
}

// drainFor returns how long a pod's backend keeps serving once the pod is
// being deleted: its grace period (deletionGracePeriodSeconds, else the
// spec's terminationGracePeriodSeconds, else Kubernetes' default of 30 s),
// at most limit. A real kubelet signals the containers at once and kills
// them when the grace period ends; a server that drains (or a preStop
// sleep) keeps serving meanwhile, while the endpoint controllers mark the
// pod's endpoint terminating and proxies take it out of rotation.
// echo-basic exits on the first signal (and sluice stops listening), so
// the test kubelet holds the signal back for this long instead. kwok's
// pod-delete stage removes the object after a random share of the grace
// period, 1 s at the least: the backend may outlive its object.
func drainFor(p *corev1.Pod, limit time.Duration) time.Duration {
	grace := int64(30)
	switch {
	case p.DeletionGracePeriodSeconds != nil:
		grace = *p.DeletionGracePeriodSeconds
	case p.Spec.TerminationGracePeriodSeconds != nil:
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	d := time.Duration(max(grace, 0)) * time.Second
	return min(d, max(limit, 0))
}

// terminate stops the backend of a pod being deleted (or gone) once its
// drain time (drainFor) from now is up; a second call changes nothing.
func (k *kubelet) terminate(p *corev1.Pod) {
	k.mu.Lock()
	b, ok := k.backends[p.UID]
	if !ok || !b.stopAt.IsZero() {
		k.mu.Unlock()
		return
	}
	d := drainFor(p, k.drain)
	b.stopAt = time.Now().Add(d)
	k.mu.Unlock()
	k.log.Printf("pod %s: terminating: its backend keeps serving for %v", b.key, d)
	time.AfterFunc(d, func() { k.stop(p.UID) })
}

// stop ends the pod's backend, if it has one.
func (k *kubelet) stop(uid types.UID) {
	k.mu.Lock()
	b, ok := k.backends[uid]
	delete(k.backends, uid)
	k.mu.Unlock()
	if !ok {
		return
	}
	for i := len(b.procs) - 1; i >= 0; i-- {
		stopProc(b.procs[i], 5*time.Second)
	}
	_ = os.RemoveAll(b.dir)
	if len(b.procs) > 0 {
		k.log.Printf("pod %s: backend stopped", b.key)
	}
}

// stopAll ends every backend and refuses new ones.
func (k *kubelet) stopAll() {
	k.mu.Lock()
	k.stopped = true
	uids := make([]types.UID, 0, len(k.backends))
	for uid := range k.backends {
		uids = append(uids, uid)
	}
	k.mu.Unlock()
	for _, uid := range uids {
		k.stop(uid)
	}
}
