//go:build conformance

package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// The load tests' objects: one namespace, a Gateway, and two Deployments,
// each behind a Service and an HTTPRoute of its own hostname: churn, of
// leanImage, and ws, of echo-basic (whose WebSocket echo it needs).
const (
	loadNS    = "sluice-load"
	churnHost = "churn.load.test"
	wsHost    = "ws.load.test"
	echoImage = "registry.k8s.io/gateway-api/echo-basic:v1.6.3"
	// leanImage is the churn pods' image, which kubecluster's test kubelet
	// serves with sluice answering {"pod":NAME,"namespace":NAMESPACE} to
	// every request (tools/kube/README.md): echo-basic's own CPU time a
	// request (net/http, its JSON echo and a log line a request) was what
	// limited EndpointChurn's rate, and the churn needs no echo.
	leanImage  = "sluice-test/lean-echo"
	echoPort   = 3000
	churnGrace = 5 // seconds: the churned pods' grace period, which kubecluster's -drain (5 s) covers
)

// The figures the load tests aim at. churnRate is a target, not a bound:
// the load is a closed loop as fast as the machine goes, and the test
// logs the rate reached and where the CPU went.
const (
	churnRate     = 20000 // requests per second wanted
	churnSeconds  = 20    // seconds of churn under load: a pod added and one removed each
	churnWorkers  = 64    // the load's connections
	wsConnections = 1000
)

// TestLoad runs load tests in a cluster of tools/kube, against
// sluice-gateway and a Sluice data plane (built and started as
// TestConformance does):
//
//   - BackendsDirect: the load of EndpointChurn sent for a few seconds
//     straight to the churn pods, without the data plane and without
//     churn, to log what the backends and the load take on their own.
//   - EndpointChurn: while a closed-loop load flows through the data plane
//     to a Deployment of leanImage, every second a pod of it is deleted
//     (its replacement added) and the Deployment is scaled between 4 and
//     6 replicas; no request may fail. Deleted pods drain as a real
//     kubelet's would (kubecluster's -drain).
//   - WebSocketsAcrossRouteChange: 1,000 WebSocket connections to echo-basic
//     through the data plane all echo; the HTTPRoute then gets a rule and a
//     filter more; once new requests see both, all 1,000 connections still
//     echo, and a new one does too.
func TestLoad(t *testing.T) {
	if bin := os.Getenv(insideEnv); bin != "" {
		insideLoad(t, bin, os.Getenv(logsEnv))
		return
	}
	runInCluster(t, "TestLoad")
}

// cluster is what the inner run of TestLoad works with.
type loadCluster struct {
	kube kubernetes.Interface
	gw   gatewayclient.Interface
	addr string // the Gateway's address, host:80
}

func insideLoad(t *testing.T, bin, logs string) {
	// The WebSockets need a descriptor each in this process and two in the
	// data plane, which inherits this limit.
	raiseNofile(t, 4*wsConnections)
	socket, state, dir := startDataPlane(t, bin, logs)

	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	c := &loadCluster{kube: kubernetes.NewForConfigOrDie(cfg), gw: gatewayclient.NewForConfigOrDie(cfg)}
	ctx := context.Background()
	_, err = c.gw.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the GatewayClass: %v", err)
	}
	startController(t, bin, logs, socket, state, dir)
	c.deploy(t)
	t.Logf("the Gateway listens on %s", c.addr)

	t.Run("BackendsDirect", c.testDirect)
	t.Run("EndpointChurn", c.testChurn)
	t.Run("WebSocketsAcrossRouteChange", c.testWebSockets)
}

// raiseNofile raises the soft limit on open files to the hard one, and
// fails the test if that is below need.
func raiseNofile(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < need {
		t.Fatalf("the open files limit is %d, below the %d these tests need: raise it (ulimit -n)", lim.Cur, need)
	}
}

// waitLong polls cond every 100 ms until it holds, failing the test after
// timeout: a bound on a hung cluster (pods, the controller), not a figure
// the test asserts.
func waitLong(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deploy creates the namespace, the Deployments, Services, Gateway and
// routes, and waits until both hostnames are served through the Gateway.
func (c *loadCluster) deploy(t *testing.T) {
	ctx := context.Background()
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: loadNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods are refused until the namespace's default service account exists.
	waitLong(t, "the default service account of "+loadNS, time.Minute, func() (bool, error) {
		_, err := c.kube.CoreV1().ServiceAccounts(loadNS).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	c.createEcho(t, "churn", leanImage, 4, churnGrace, fastPods)
	c.createEcho(t, "ws", echoImage, 1, 30, nil)

	gwName := gatewayv1.ObjectName("load")
	_, err := c.gw.GatewayV1().Gateways(loadNS).Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: string(gwName)},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: className,
			Listeners:        []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ name, host string }{{"churn", churnHost}, {"ws", wsHost}} {
		route := &gatewayv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: r.name},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gwName}}},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(r.host)},
				Rules:           []gatewayv1.HTTPRouteRule{backendRule(r.name)},
			},
		}
		if _, err := c.gw.GatewayV1().HTTPRoutes(loadNS).Create(ctx, route, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitLong(t, "the Gateway's address", time.Minute, func() (bool, error) {
		g, err := c.gw.GatewayV1().Gateways(loadNS).Get(ctx, string(gwName), metav1.GetOptions{})
		if err != nil || len(g.Status.Addresses) == 0 {
			return false, err
		}
		c.addr = net.JoinHostPort(g.Status.Addresses[0].Value, "80")
		return true, nil
	})
	client := c.client()
	defer client.CloseIdleConnections()
	for _, h := range []struct{ host, pod string }{{churnHost, "churn-"}, {wsHost, "ws-"}} {
		waitLong(t, "http://"+h.host+"/ to be served by its pods", 2*time.Minute, func() (bool, error) {
			pod, _, err := echo(client, h.host, "/")
			return err == nil && strings.HasPrefix(pod, h.pod), err
		})
	}
}

// fastPods are the annotations that make kwok's stages take a churned pod
// to its address in 0.2 to 0.5 s and to Ready 1 to 1.5 s after that (by
// default each takes 1 to 5 s): pods added every second then become
// endpoints within the second or two a real node takes, and the test
// kubelet has a second to start the backend before its pod is Ready (a
// real kubelet's readiness probe would see to that).
var fastPods = map[string]string{
	"pod-create.stage.kwok.x-k8s.io/delay":        "200ms",
	"pod-create.stage.kwok.x-k8s.io/jitter-delay": "500ms",
	"pod-ready.stage.kwok.x-k8s.io/delay":         "1s",
	"pod-ready.stage.kwok.x-k8s.io/jitter-delay":  "1500ms",
}

// createEcho creates a Deployment of image (echo-basic or leanImage, both
// on echoPort), its pods labelled app=name and annotated with annotations,
// and a Service of the same name on port 80.
func (c *loadCluster) createEcho(t *testing.T, name, image string, replicas int32, grace int64, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:  "echo",
						Image: image,
						Ports: []corev1.ContainerPort{{ContainerPort: echoPort}},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: field("metadata.name")},
							{Name: "NAMESPACE", ValueFrom: field("metadata.namespace")},
						},
					}},
				},
			},
		},
	}
	if _, err := c.kube.AppsV1().Deployments(loadNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(echoPort)}},
		},
	}
	if _, err := c.kube.CoreV1().Services(loadNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// backendRule is a rule sending every path to the Service name, port 80.
func backendRule(name string) gatewayv1.HTTPRouteRule {
	port := gatewayv1.PortNumber(80)
	return gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{{
		BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(name), Port: &port,
		}},
	}}}
}

// client returns an HTTP client whose every connection goes to the
// Gateway's address, whatever the URL's host.
func (c *loadCluster) client() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, c.addr)
			},
			MaxIdleConnsPerHost: 4,
			DisableCompression:  true,
		},
	}
}

// echo sends GET path to host through client and returns the pod that
// answered, as echo-basic's JSON or leanImage's says, and the response's
// header.
func echo(client *http.Client, host, path string) (pod string, h http.Header, err error) {
	resp, err := client.Get("http://" + host + path)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.Header, fmt.Errorf("GET http://%s%s: %s: %.200q", host, path, resp.Status, body)
	}
	var e struct{ Pod string }
	if err := json.Unmarshal(body, &e); err != nil {
		return "", resp.Header, fmt.Errorf("GET http://%s%s: %v: %.200q", host, path, err, body)
	}
	return e.Pod, resp.Header, nil
}

// churnRequest is the request of the churn load.
var churnRequest = []byte("GET /churn HTTP/1.1\r\nHost: " + churnHost + "\r\n\r\n")

// podCheck returns a rawLoad's check of a sampled body: the JSON of
// leanImage (or echo-basic), from a pod of loadNS whose name starts with
// prefix, which it passes to record.
func podCheck(prefix string, record func(pod string)) func([]byte) error {
	return func(body []byte) error {
		var e struct{ Pod, Namespace string }
		if err := json.Unmarshal(body, &e); err != nil {
			return err
		}
		if !strings.HasPrefix(e.Pod, prefix) || e.Namespace != loadNS {
			return fmt.Errorf("answered by pod %q of namespace %q, not one of %s/%s*", e.Pod, e.Namespace, loadNS, prefix)
		}
		record(e.Pod)
		return nil
	}
}

// directSeconds is how long BackendsDirect loads the backends.
const directSeconds = 5

// testDirect is TestLoad's BackendsDirect: the churn load sent for
// directSeconds to the churn pods' addresses, each connection to one pod,
// rather than through the data plane, and with no churn; the request has
// the fields the data plane adds. It logs what the
// backends and the load take a request without the data plane, against which
// EndpointChurn's figures are read; no request may fail.
func (c *loadCluster) testDirect(t *testing.T) {
	l, err := c.kube.CoreV1().Pods(loadNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=churn"})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := range l.Items {
		if p := &l.Items[i]; p.DeletionTimestamp == nil && isReady(p) && p.Status.PodIP != "" {
			addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(echoPort)))
		}
	}
	if len(addrs) == 0 {
		t.Fatal("no churn pod is ready")
	}
	// The request as the data plane sends it upstream (proxy/request.go),
	// so that the backends parse the same request.
	host, _, _ := net.SplitHostPort(c.addr)
	req := []byte("GET /churn HTTP/1.1\r\nHost: " + churnHost + "\r\nX-Forwarded-For: " + host +
		"\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: " + churnHost + "\r\nVia: 1.1 sluice\r\n\r\n")
	cpu0 := cpuSnapshot()
	start := time.Now()
	load := startRawLoad(t, churnWorkers, addrs, req, 0, podCheck("churn-", func(string) {}))
	<-time.After(directSeconds * time.Second) // the load's length; no assertion waits on it
	n, failed, first, dials := load.Stop()
	elapsed := time.Since(start)
	cpu := cpuSnapshot().since(cpu0)
	t.Logf("straight to %d pods, no data plane: %d requests in %v over %d connections (%d opened): %.0f req/s; %d failed", len(addrs), n, elapsed.Round(time.Millisecond), churnWorkers, dials, float64(n)/elapsed.Seconds(), failed)
	t.Logf("CPU over the run: %s", cpu)
	t.Logf("CPU a request served: %s", cpu.perRequest(n))
	if failed > 0 {
		t.Errorf("%d of %d requests straight to the pods failed; the first: %s", failed, n+failed, first)
	}
	if n == 0 {
		t.Errorf("no request was served straight by the pods")
	}
}

// testChurn is TestLoad's EndpointChurn.
func (c *loadCluster) testChurn(t *testing.T) {
	ctx := context.Background()
	pods := c.kube.CoreV1().Pods(loadNS)
	list := func() []corev1.Pod {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=churn"})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	before := map[string]bool{}
	for _, p := range list() {
		before[p.Name] = true
	}

	var (
		mu     sync.Mutex
		served = map[string]int{} // a sample of the pods that answered
	)
	check := podCheck("churn-", func(pod string) {
		mu.Lock()
		served[pod]++
		mu.Unlock()
	})
	cpu0 := cpuSnapshot()
	cpuLast := cpu0
	start := time.Now()
	load := startRawLoad(t, churnWorkers, []string{c.addr}, churnRequest, 0, check)

	deleted, waited := 0, 0
	tick := time.NewTicker(time.Second)
	for i := range churnSeconds {
		<-tick.C
		// A snapshot a second keeps the CPU time of the backends that end
		// during the run.
		cpuLast = cpuLast.merge(cpuSnapshot())
		// Scale between 4 and 6 replicas: two pods added, then two removed.
		replicas := 6 - 2*(i%2)
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
		if _, err := c.kube.AppsV1().Deployments(loadNS).Patch(ctx, "churn", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("scaling to %d: %v", replicas, err)
		}
		// And delete the oldest serving pod, which its ReplicaSet replaces,
		// as long as two others serve: a rolling update keeps some
		// available, and a backend with no ready pod is answered 503.
		var serving []*corev1.Pod
		cur := list()
		sort.Slice(cur, func(a, b int) bool { return cur[a].CreationTimestamp.Before(&cur[b].CreationTimestamp) })
		for j := range cur {
			if cur[j].DeletionTimestamp == nil && isReady(&cur[j]) {
				serving = append(serving, &cur[j])
			}
		}
		if len(serving) < 3 {
			waited++
			continue
		}
		if err := pods.Delete(ctx, serving[0].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s: %v", serving[0].Name, err)
		} else {
			deleted++
		}
	}
	tick.Stop()
	n, failed, first, dials := load.Stop()
	elapsed := time.Since(start)
	cpu := cpuLast.merge(cpuSnapshot()).since(cpu0)

	created := 0
	newServed := 0
	mu.Lock()
	for name := range served {
		if !before[name] {
			newServed++
		}
	}
	pods0 := len(served)
	mu.Unlock()
	after := list()
	for _, p := range after {
		if !before[p.Name] {
			created++
		}
	}
	rate := float64(n) / elapsed.Seconds()
	t.Logf("%d requests in %v over %d connections (%d opened): %.0f req/s (target %d req/s); %d failed", n, elapsed.Round(time.Millisecond), churnWorkers, dials, rate, churnRate, failed)
	t.Logf("churn: %d pods deleted by the test (%d times fewer than 3 pods were serving, and none was), %d scale changes, %d pods of the churn Deployment now exist that did not before; %d pods answered in a sample of 1 request in 128, %d of them created during the churn", deleted, waited, churnSeconds, created, pods0, newServed)
	t.Logf("CPU over the run: %s", cpu)
	t.Logf("CPU a request served: %s", cpu.perRequest(n))
	if rate < churnRate {
		t.Logf("the rate reached is below the %d req/s wanted: on this machine's %d CPUs the load, the data plane, the backends and the control plane share them (CPU above)", churnRate, cpu.ncpu)
	}
	if failed > 0 {
		t.Errorf("%d of %d requests failed under endpoint churn; the first: %s", failed, n+failed, first)
	}
	if deleted < churnSeconds/2 {
		t.Errorf("only %d pods were deleted in %d churn steps, want one in two at least", deleted, churnSeconds)
	}
	if newServed == 0 {
		t.Errorf("no pod created during the churn answered a sampled request: the data plane did not take up new endpoints (pods that answered: %v)", served)
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testWebSockets is TestLoad's WebSocketsAcrossRouteChange.
func (c *loadCluster) testWebSockets(t *testing.T) {
	ctx := context.Background()
	conns := make([]*websocket.Conn, wsConnections)
	t.Cleanup(func() {
		for _, ws := range conns {
			if ws != nil {
				ws.Close()
			}
		}
	})
	// Open them 50 at a time, each checked with one echo.
	parallel(t, wsConnections, 50, func(i int) error {
		ws, err := c.dialWS()
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		conns[i] = ws
		return wsEcho(ws, fmt.Sprintf("before %d", i))
	})
	t.Logf("%d WebSocket connections open through %s, each echoed", wsConnections, c.addr)

	// Change the route: a rule more (/new to the churn Service) and a
	// response header filter on the rule the WebSockets took.
	routes := c.gw.GatewayV1().HTTPRoutes(loadNS)
	r, err := routes.Get(ctx, "ws", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, gatewayv1.HTTPRouteFilter{
		Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{
			Set: []gatewayv1.HTTPHeader{{Name: "X-Route", Value: "changed"}},
		},
	})
	added := backendRule("churn")
	prefix := gatewayv1.PathMatchPathPrefix
	path := "/new"
	added.Matches = []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	r.Spec.Rules = append(r.Spec.Rules, added)
	if _, err := routes.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := c.client()
	defer client.CloseIdleConnections()
	waitLong(t, "new requests to see the changed route (/new to the churn pods, X-Route on /)", time.Minute, func() (bool, error) {
		pod, _, err := echo(client, wsHost, "/new")
		if err != nil || !strings.HasPrefix(pod, "churn-") {
			return false, err
		}
		pod, h, err := echo(client, wsHost, "/")
		return err == nil && strings.HasPrefix(pod, "ws-") && h.Get("X-Route") == "changed", err
	})

	// Every connection opened before the change still echoes.
	var closed atomic.Int64
	parallel(t, wsConnections, 50, func(i int) error {
		if err := wsEcho(conns[i], fmt.Sprintf("after %d", i)); err != nil {
			closed.Add(1)
			return fmt.Errorf("connection %d, opened before the route changed: %w", i, err)
		}
		return nil
	})
	// And a new one opens and echoes on the changed route.
	ws, err := c.dialWS()
	if err != nil {
		t.Fatalf("a WebSocket opened after the route changed: %v", err)
	}
	defer ws.Close()
	if err := wsEcho(ws, "new"); err != nil {
		t.Fatalf("a WebSocket opened after the route changed: %v", err)
	}
	t.Logf("after the route change: %d of %d connections still echo; a new one does too", wsConnections-int(closed.Load()), wsConnections)
}

// dialWS opens a WebSocket to echo-basic's /ws through the Gateway.
func (c *loadCluster) dialWS() (*websocket.Conn, error) {
	cfg, err := websocket.NewConfig("ws://"+wsHost+"/ws", "http://"+wsHost+"/")
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ws, nil
}

// wsEcho sends msg on ws and checks that it comes back, within 30 s.
func wsEcho(ws *websocket.Conn, msg string) error {
	ws.SetDeadline(time.Now().Add(30 * time.Second))
	if err := websocket.Message.Send(ws, msg); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if got != msg {
		return fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return nil
}

// parallel runs f(0) to f(n-1), width at a time, and fails the test with
// the first error and how many there were.
func parallel(t *testing.T, n, width int, f func(i int) error) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		errs  int
	)
	next := make(chan int)
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					errs++
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if errs > 0 {
		t.Fatalf("%d of %d failed; the first: %v", errs, n, first)
	}
}

// cpuUsage is the CPU time used by the processes of the machine (this
// test shares the PID namespace) and by the machine as a whole, from
// /proc. The processes of the test are kubecluster, which started this
// inner run, and its descendants: the control plane, the backends, this
// test and the data plane; the others are other work on the machine.
type cpuUsage struct {
	ncpu        int
	total, idle uint64         // machine ticks, all CPUs
	byPID       map[int]uint64 // user+system ticks
	comm        map[int]string // each PID's command
	ppid        map[int]int    // each PID's parent
	// since() fills these: ticks by command, of the test's processes
	// (byComm) and of the others (otherComm).
	byComm, otherComm map[string]uint64
}

func cpuSnapshot() cpuUsage {
	u := cpuUsage{byPID: map[int]uint64{}, comm: map[int]string{}, ppid: map[int]int{}}
	if f, err := os.Open("/proc/stat"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && fields[0] == "cpu" {
				for i, v := range fields[1:] {
					n, _ := strconv.ParseUint(v, 10, 64)
					u.total += n
					if i == 3 || i == 4 { // idle, iowait
						u.idle += n
					}
				}
			} else if strings.HasPrefix(fields[0], "cpu") {
				u.ncpu++
			}
		}
		f.Close()
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		lp, rp := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if lp < 0 || rp < lp {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:lp])))
		fields := strings.Fields(string(b[rp+1:]))
		if len(fields) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		ut, _ := strconv.ParseUint(fields[11], 10, 64)
		st, _ := strconv.ParseUint(fields[12], 10, 64)
		u.byPID[pid] = ut + st
		u.comm[pid] = string(b[lp+1 : rp])
		u.ppid[pid] = ppid
	}
	return u
}

// merge returns u with the processes of later, a later snapshot: each
// process's ticks as later counts them, and those of processes that have
// ended since u as u counted them last.
func (u cpuUsage) merge(later cpuUsage) cpuUsage {
	m := later
	m.byPID, m.comm, m.ppid = maps.Clone(later.byPID), maps.Clone(later.comm), maps.Clone(later.ppid)
	for pid, ticks := range u.byPID {
		if _, ok := m.byPID[pid]; !ok {
			m.byPID[pid], m.comm[pid], m.ppid[pid] = ticks, u.comm[pid], u.ppid[pid]
		}
	}
	return m
}

// since returns the usage from u0 to u, by command, the test's processes
// (descendants of this process's parent) apart from the others.
func (u cpuUsage) since(u0 cpuUsage) cpuUsage {
	d := cpuUsage{ncpu: u.ncpu, total: u.total - u0.total, idle: u.idle - u0.idle,
		byComm: map[string]uint64{}, otherComm: map[string]uint64{}}
	root := os.Getppid()
	ours := func(pid int) bool {
		for range 64 { // a bound on the depth, against a cycle of reused PIDs
			if pid == root {
				return true
			}
			next, ok := u.ppid[pid]
			if !ok || next <= 1 {
				return false
			}
			pid = next
		}
		return false
	}
	for pid, ticks := range u.byPID {
		used := ticks - min(ticks, u0.byPID[pid])
		if used == 0 {
			continue
		}
		if ours(pid) {
			d.byComm[u.comm[pid]] += used
		} else {
			d.otherComm[u.comm[pid]] += used
		}
	}
	return d
}

// perRequest lists the CPU time a request of n took in each of the
// test's commands of String's list, in µs (over the whole run: ticks of
// 10 ms), this one (the load's client) marked, then their sum and the
// other work's.
func (u cpuUsage) perRequest(n int64) string {
	if u.total == 0 || n == 0 {
		return "unknown"
	}
	self, _ := os.ReadFile("/proc/self/comm")
	us := func(ticks uint64) float64 { return float64(ticks) * 1e4 / float64(n) }
	var sb strings.Builder
	for _, e := range busiest(u.byComm, u.total) {
		fmt.Fprintf(&sb, "%s %.1f µs", e.comm, us(e.ticks))
		if e.comm == strings.TrimSpace(string(self)) {
			sb.WriteString(" (the load)")
		}
		sb.WriteString(", ")
	}
	fmt.Fprintf(&sb, "the test's processes together %.1f µs; other work on the machine %.1f µs (%d CPUs)", us(sum(u.byComm)), us(sum(u.otherComm)), u.ncpu)
	return sb.String()
}

type commTicks struct {
	comm  string
	ticks uint64
}

// busiest returns the commands of byComm that used more than 1% of total,
// busiest first.
func busiest(byComm map[string]uint64, total uint64) []commTicks {
	var all []commTicks
	for c, t := range byComm {
		if float64(t) > 0.01*float64(total) {
			all = append(all, commTicks{c, t})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ticks > all[j].ticks })
	return all
}

func sum(byComm map[string]uint64) uint64 {
	var s uint64
	for _, t := range byComm {
		s += t
	}
	return s
}

// String lists the busy share of the machine's CPUs, then the CPU seconds
// of the test's commands and of the other work on the machine, each
// command that used more than 1% of it named (clock ticks of 10 ms).
func (u cpuUsage) String() string {
	if u.total == 0 {
		return "unknown"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d CPUs %.0f%% busy; the test's processes %.1f s:", u.ncpu, 100*float64(u.total-u.idle)/float64(u.total), float64(sum(u.byComm))/100)
	for _, e := range busiest(u.byComm, u.total) {
		fmt.Fprintf(&sb, " %s %.1f s", e.comm, float64(e.ticks)/100)
	}
	fmt.Fprintf(&sb, "; other work %.1f s:", float64(sum(u.otherComm))/100)
	for _, e := range busiest(u.otherComm, u.total) {
		fmt.Fprintf(&sb, " %s %.1f s", e.comm, float64(e.ticks)/100)
	}
	return sb.String()
}
