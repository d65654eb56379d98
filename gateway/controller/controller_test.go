package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/sluice-server/sluice/gateway/controller"
	"github.com/sluice-server/sluice/gateway/translate"
	"github.com/sluice-server/sluice/sluicetest"
)

const controllerName = "sluice-server.dev/gateway-controller"

// binary is the sluice command, built from the repository by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-gateway-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", binary, "./cmd/sluice")
	build.Dir = "../.." // the main module: sluice builds with its own go.mod
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sluice:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dataPlane is a sluice server with its admin API on a Unix socket.
type dataPlane struct {
	dir, socket string
	mu          sync.Mutex
	log         bytes.Buffer
}

func (d *dataPlane) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.Write(p)
}

// logged returns how many lines of the server's log hold s.
func (d *dataPlane) logged(s string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Count(d.log.String(), s)
}

// startDataPlane starts sluice serve on a config that has only the admin
// API and a 404, as the data plane's ConfigMap would hold.
func startDataPlane(t *testing.T) *dataPlane {
	t.Helper()
	d := &dataPlane{dir: t.TempDir()}
	d.socket = filepath.Join(d.dir, "admin.sock")
	file := filepath.Join(d.dir, "sluice.yaml")
	cfg := fmt.Sprintf("admin: {socket: %s}\nlisten: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{text: {status: 404, body: \"\"}}]}]\n", d.socket)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "-c", file)
	cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1", "XDG_CACHE_HOME="+d.dir, "STATE_DIRECTORY="+d.dir)
	cmd.Stdout, cmd.Stderr = d, d
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("sluice's log:\n%s", d.log.String())
		}
	})
	sluicetest.WaitFor(t, "the admin socket", func() bool {
		c, err := net.Dial("unix", d.socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return d
}

var nextIP = 20

// backend starts n backends on addresses of their own and one port, and
// returns their addresses and the port. Each answers with its name.
func backend(t *testing.T, name string, n int) ([]string, int) {
	t.Helper()
	var ips []string
	port := 0
	for i := range n {
		ip := fmt.Sprintf("127.0.0.%d", nextIP)
		nextIP++
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		id := fmt.Sprintf("%s-%d", name, i)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, id)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		ips = append(ips, ip)
	}
	return ips, port
}

func ptr[T any](v T) *T { return &v }

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

func slice(name string, port int, ips ...string) *discoveryv1.EndpointSlice {
	eps := make([]discoveryv1.Endpoint, len(ips))
	for i, ip := range ips {
		eps[i] = discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(port)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
}

func rule(path, svc string) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchPathPrefix), Value: ptr(path)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(svc), Port: ptr(gatewayv1.PortNumber(80))}}}},
	}
}

// get requests path from addr for example.com, returning the status and
// body ("" on an error).
func get(addr, path string) (int, string) {
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Host = "example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The controller loads a config the data plane serves from the objects,
// applies endpoint churn by changing upstream sets without loading a
// config, loads one for a route change, and writes the status back with
// lastTransitionTime kept while a condition holds.
func TestController(t *testing.T) {
	d := startDataPlane(t)
	v1, v1Port := backend(t, "v1", 2)
	v2, v2Port := backend(t, "v2", 1)
	port := sluicetest.FreePort(t)
	kube := kubefake.NewClientset(service("v1"), service("v2"), slice("v1", v1Port, v1[0]), slice("v2", v2Port, v2...),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	hr := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules:           []gatewayv1.HTTPRouteRule{rule("/", "v1")},
		},
	}
	gw := kubeGateway(port)
	// The field-managed fake (NewClientset) knows no Gateway API
	// resources, and the constructor files a Gateway under another
	// version than its clients list: create the objects one by one.
	gws := gatewayfake.NewSimpleClientset()
	ctx0 := context.Background()
	if _, err := gws.GatewayV1().GatewayClasses().Create(ctx0, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().Gateways("default").Create(ctx0, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().HTTPRoutes("default").Create(ctx0, hr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{
		Kube: kube, Gateway: gws, AdminSocket: d.socket, Verify: 200 * time.Millisecond,
		Options: translate.Options{ControllerName: controllerName, AddressPool: netip.MustParsePrefix("127.0.101.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	addr := net.JoinHostPort("127.0.101.1", strconv.Itoa(port))
	sluicetest.WaitFor(t, "the route served", func() bool {
		s, body := get(addr, "/x")
		return s == 200 && body == "v1-0"
	})

	// The status: the Gateway programmed at its address, the route
	// accepted, the class accepted.
	var accepted metav1.Condition
	sluicetest.WaitFor(t, "the status written", func() bool {
		g, err := gws.GatewayV1().Gateways("default").Get(ctx, "gw", metav1.GetOptions{})
		if err != nil || len(g.Status.Addresses) != 1 || g.Status.Addresses[0].Value != "127.0.101.1" || !isTrue(g.Status.Conditions, "Programmed") {
			return false
		}
		r, err := gws.GatewayV1().HTTPRoutes("default").Get(ctx, "app", metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) != 1 || !isTrue(r.Status.Parents[0].Conditions, "Accepted") {
			return false
		}
		accepted = find(r.Status.Parents[0].Conditions, "Accepted")
		gc, err := gws.GatewayV1().GatewayClasses().Get(ctx, "sluice", metav1.GetOptions{})
		return err == nil && isTrue(gc.Status.Conditions, "Accepted")
	})
	if accepted.LastTransitionTime.IsZero() {
		t.Error("the route's Accepted condition has no lastTransitionTime")
	}
	sluicetest.WaitFor(t, "the first load counted", func() bool { return c.Stats().Loads == 1 })
	loads := 1

	// Endpoint churn: v1's endpoint replaced by another, without a load.
	if _, err := kube.DiscoveryV1().EndpointSlices("default").Update(ctx, slice("v1", v1Port, v1[1]), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "the new endpoint served", func() bool {
		_, body := get(addr, "/x")
		return body == "v1-1"
	})
	for range 10 {
		if _, body := get(addr, "/x"); body != "v1-1" {
			t.Fatalf("after the endpoint change, answered by %q, want v1-1 alone", body)
		}
	}
	// The data plane applies the change before the controller counts it.
	sluicetest.WaitFor(t, "the upstream change counted", func() bool { return c.Stats().UpstreamPuts > 0 })
	if st := c.Stats(); st.Loads != loads {
		t.Errorf("endpoint change: %d loads (%d before); want none", st.Loads, loads)
	}
	if n := d.logged("upstream set changed"); n == 0 {
		t.Error("sluice logged no upstream set change")
	}

	// A route change loads a config.
	hr, _ = gws.GatewayV1().HTTPRoutes("default").Get(ctx, "app", metav1.GetOptions{})
	hr.Spec.Rules = append(hr.Spec.Rules, rule("/v2", "v2"))
	if _, err := gws.GatewayV1().HTTPRoutes("default").Update(ctx, hr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "the new rule served", func() bool {
		_, body := get(addr, "/v2/a")
		return body == "v2-0"
	})
	if _, body := get(addr, "/x"); body != "v1-1" {
		t.Errorf("after the route change / answered by %q, want v1-1", body)
	}
	sluicetest.WaitFor(t, "the route change counted as a load", func() bool { return c.Stats().Loads > loads })
	r, _ := gws.GatewayV1().HTTPRoutes("default").Get(ctx, "app", metav1.GetOptions{})
	if got := find(r.Status.Parents[0].Conditions, "Accepted"); !got.LastTransitionTime.Equal(&accepted.LastTransitionTime) {
		t.Errorf("Accepted's lastTransitionTime moved from %v to %v while it held", accepted.LastTransitionTime, got.LastTransitionTime)
	}

	// No endpoint left: 503, by a config that says so.
	if _, err := kube.DiscoveryV1().EndpointSlices("default").Update(ctx, slice("v2", v2Port), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "503 for a backend without endpoints", func() bool {
		s, _ := get(addr, "/v2/a")
		return s == 503
	})

	// The data plane's upstream set holds what the controller put.
	var set struct{ Hosts []struct{ Name string } }
	admin := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", d.socket)
	}}}
	defer func() {
		// Another config loaded behind the controller's back (or a data
		// plane restarted) is replaced by the controller's.
		before := c.Stats().Loads
		cfg := fmt.Sprintf("admin: {socket: %s}\nlisten: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{text: {status: 404, body: \"\"}}]}]\n", d.socket)
		resp, err := admin.Post("http://admin/load", "application/yaml", strings.NewReader(cfg))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("loading another config: %v %v", resp, err)
		}
		resp.Body.Close()
		sluicetest.WaitFor(t, "the controller's config loaded again", func() bool {
			_, body := get(addr, "/x")
			return body == "v1-1"
		})
		sluicetest.WaitFor(t, "the load counted", func() bool { return c.Stats().Loads > before })
	}()
	resp, err := admin.Get("http://admin/upstreams/default.app.r0.0")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if len(set.Hosts) != 1 || set.Hosts[0].Name != "http://"+net.JoinHostPort(v1[1], strconv.Itoa(v1Port)) {
		t.Errorf("upstream set default.app.r0.0 = %+v, want v1's second endpoint alone", set.Hosts)
	}
}

func kubeGateway(port int) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "sluice",
			Listeners:        []gatewayv1.Listener{{Name: "http", Port: gatewayv1.PortNumber(port), Protocol: gatewayv1.HTTPProtocolType}},
		},
	}
}

func find(cs []metav1.Condition, typ string) metav1.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func isTrue(cs []metav1.Condition, typ string) bool {
	return find(cs, typ).Status == metav1.ConditionTrue
}

// Of two controllers that share a Lease both configure their data planes
// and one writes status; the other takes over when it stops.
func TestLeaderElection(t *testing.T) {
	kube := kubefake.NewClientset()
	gws := gatewayfake.NewSimpleClientset()
	if _, err := gws.GatewayV1().GatewayClasses().Create(context.Background(), &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := controller.Election{Namespace: "default", Name: "sluice-gateway", LeaseDuration: 2e9, RenewDeadline: 1e9, RetryPeriod: 1e8}
	var cs [2]*controller.Controller
	var cancels [2]context.CancelFunc
	var dones [2]chan error
	for i := range cs {
		c, err := controller.New(controller.Config{
			Kube: kube, Gateway: gws, AdminSocket: filepath.Join(t.TempDir(), "none.sock"),
			Options: translate.Options{ControllerName: controllerName},
		})
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i], dones[i] = cancel, make(chan error, 1)
		e := e
		e.Identity = "c" + strconv.Itoa(i)
		go func() { dones[i] <- c.RunElected(ctx, e) }()
		if i == 0 {
			sluicetest.WaitFor(t, "the first controller writing status", func() bool { return c.Stats().StatusWrites > 0 })
		}
	}
	defer func() {
		cancels[1]()
		if err := <-dones[1]; err != nil {
			t.Errorf("RunElected: %v", err)
		}
	}()
	sluicetest.WaitFor(t, "the second controller reconciling", func() bool { return cs[1].Stats().Reconciles > 0 })
	if st := cs[1].Stats(); st.Leading || st.StatusWrites != 0 {
		t.Errorf("the second controller leads (%v) or wrote %d statuses while the first led", st.Leading, st.StatusWrites)
	}
	if !cs[0].Stats().Leading {
		t.Error("the first controller does not lead")
	}
	cancels[0]()
	if err := <-dones[0]; err != nil {
		t.Errorf("RunElected: %v", err)
	}
	sluicetest.WaitFor(t, "the second controller leading", func() bool { return cs[1].Stats().Leading })
}

// A config the data plane cannot serve (an address it cannot bind) leaves
// the Gateway not programmed, saying why, and the data plane serving on.
func TestControllerRefused(t *testing.T) {
	d := startDataPlane(t)
	kube := kubefake.NewClientset()
	gws := gatewayfake.NewSimpleClientset()
	ctx := context.Background()
	if _, err := gws.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().Gateways("default").Create(ctx, kubeGateway(8080), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{
		Kube: kube, Gateway: gws, AdminSocket: d.socket,
		// TEST-NET-1: no address of it is this machine's.
		Options: translate.Options{ControllerName: controllerName, AddressPool: netip.MustParsePrefix("192.0.2.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var programmed metav1.Condition
	sluicetest.WaitFor(t, "the Gateway's status", func() bool {
		g, err := gws.GatewayV1().Gateways("default").Get(ctx, "gw", metav1.GetOptions{})
		programmed = find(g.Status.Conditions, "Programmed")
		return err == nil && programmed.Reason != ""
	})
	if programmed.Status != metav1.ConditionFalse || programmed.Reason != "Pending" || !strings.Contains(programmed.Message, "192.0.2.1:8080") {
		t.Errorf("Programmed = %s %s %q; want False, Pending, naming the address", programmed.Status, programmed.Reason, programmed.Message)
	}
	if st := c.Stats(); st.Failures == 0 || st.Loads != 0 {
		t.Errorf("stats %+v: want a failure and no load", st)
	}
	if n := d.logged("admin: config loaded"); n != 0 {
		t.Errorf("the data plane loaded %d configs", n)
	}
}

// Endpoints that change under requests, one change after another, fail
// none of them and load no config: each change is an upstream set's.
func TestControllerEndpointChurn(t *testing.T) {
	d := startDataPlane(t)
	ips, bport := backend(t, "v1", 4)
	port := sluicetest.FreePort(t)
	kube := kubefake.NewClientset(service("v1"), slice("v1", bport, ips[0]))
	gws := gatewayfake.NewSimpleClientset()
	ctx := context.Background()
	hr := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules:           []gatewayv1.HTTPRouteRule{rule("/", "v1")},
		},
	}
	if _, err := gws.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().Gateways("default").Create(ctx, kubeGateway(port), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().HTTPRoutes("default").Create(ctx, hr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{
		Kube: kube, Gateway: gws, AdminSocket: d.socket, Debounce: 10 * time.Millisecond,
		Options: translate.Options{ControllerName: controllerName, AddressPool: netip.MustParsePrefix("127.0.102.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	addr := net.JoinHostPort("127.0.102.1", strconv.Itoa(port))
	sluicetest.WaitFor(t, "the route served", func() bool {
		s, _ := get(addr, "/")
		return s == 200
	})
	// The data plane serves the config before the controller counts it.
	sluicetest.WaitFor(t, "the first load counted", func() bool { return c.Stats().Loads == 1 })
	loads := 1

	load := sluicetest.StartLoad(t, 4, func() *http.Client { return &http.Client{Transport: &http.Transport{}} }, func(hc *http.Client) error {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = "example.com"
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "v1-") {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	})
	// Sets of one and two of the four endpoints, each change waited for
	// (the controller counts it) before the next, with requests between.
	sets := [][]string{{ips[0], ips[1]}, {ips[1]}, {ips[1], ips[2]}, {ips[2], ips[3]}, {ips[3]}, {ips[0], ips[3]}, {ips[0]}}
	for round := range 3 {
		for i, set := range sets {
			puts := c.Stats().UpstreamPuts
			s := slice("v1", bport, set...)
			if _, err := kube.DiscoveryV1().EndpointSlices("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			sluicetest.WaitFor(t, fmt.Sprintf("change %d of round %d applied", i, round), func() bool { return c.Stats().UpstreamPuts > puts })
			load.WaitServed(t, 20)
		}
	}
	served, failed, first := load.Stop()
	if failed > 0 {
		t.Errorf("%d of %d requests failed under endpoint churn; the first: %s", failed, served+failed, first)
	}
	if st := c.Stats(); st.Loads != loads {
		t.Errorf("%d configs loaded under endpoint churn, want none", st.Loads-loads)
	}
	t.Logf("%d requests served over %d endpoint changes", served, 3*len(sets))
}

// An HTTPS listener's certificate, from its Secret, is written beside the
// data plane's config and served.
func TestControllerHTTPS(t *testing.T) {
	d := startDataPlane(t)
	ca := sluicetest.NewCA(t)
	certFile, keyFile := ca.IssueFiles(t, t.TempDir(), "secure.example")
	crt, _ := os.ReadFile(certFile)
	key, _ := os.ReadFile(keyFile)
	ips, bport := backend(t, "v1", 1)
	port := sluicetest.FreePort(t)
	kube := kubefake.NewClientset(service("v1"), slice("v1", bport, ips...), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cert"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
	})
	gws := gatewayfake.NewSimpleClientset()
	ctx := context.Background()
	gw := kubeGateway(port)
	gw.Spec.Listeners[0].Protocol = gatewayv1.HTTPSProtocolType
	gw.Spec.Listeners[0].TLS = &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "cert"}}}
	hr := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gatewayv1.Hostname{"secure.example"},
			Rules:           []gatewayv1.HTTPRouteRule{rule("/", "v1")},
		},
	}
	if _, err := gws.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().Gateways("default").Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().HTTPRoutes("default").Create(ctx, hr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{
		Kube: kube, Gateway: gws, AdminSocket: d.socket,
		Options: translate.Options{ControllerName: controllerName, AddressPool: netip.MustParsePrefix("127.0.103.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig("secure.example")}}
	url := "https://" + net.JoinHostPort("127.0.103.1", strconv.Itoa(port)) + "/a"
	var body string
	sluicetest.WaitFor(t, "the HTTPS route served", func() bool {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "secure.example"
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return resp.StatusCode == 200
	})
	if body != "v1-0" {
		t.Errorf("answered %q, want v1-0", body)
	}
	if _, err := os.Stat(filepath.Join(d.dir, "tls", "default_cert.crt")); err != nil {
		t.Errorf("the certificate beside the config: %v", err)
	}
}
