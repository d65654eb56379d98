package controller_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/sluice-server/sluice/gateway/controller"
	"github.com/sluice-server/sluice/gateway/translate"
	"github.com/sluice-server/sluice/sluicetest"
)

// A GRPCRoute the controller watches is served by the real sluice data
// plane to a grpc-go client, over h2c at both ends, and its status is
// written back.
func TestControllerGRPCRoute(t *testing.T) {
	d := startDataPlane(t)
	ip := fmt.Sprintf("127.0.0.%d", nextIP)
	nextIP++
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("who", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	port := sluicetest.FreePort(t)
	kube := kubefake.NewClientset(service("g"), slice("g", ln.Addr().(*net.TCPAddr).Port, ip),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	gws := gatewayfake.NewSimpleClientset()
	ctx := context.Background()
	if _, err := gws.GatewayV1().GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "sluice"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gws.GatewayV1().Gateways("default").Create(ctx, kubeGateway(port), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gr := &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "health"},
		Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}},
			Rules: []gatewayv1.GRPCRouteRule{{
				Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: ptr("grpc.health.v1.Health"), Method: ptr("Check")}}},
				BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "g", Port: ptr(gatewayv1.PortNumber(80))}}}},
			}},
		},
	}
	if _, err := gws.GatewayV1().GRPCRoutes("default").Create(ctx, gr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{
		Kube: kube, Gateway: gws, AdminSocket: d.socket, Verify: 200 * time.Millisecond,
		Options: translate.Options{ControllerName: controllerName, AddressPool: netip.MustParsePrefix("127.0.109.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	sluicetest.WaitFor(t, "the GRPCRoute accepted", func() bool {
		r, err := gws.GatewayV1().GRPCRoutes("default").Get(ctx, "health", metav1.GetOptions{})
		return err == nil && len(r.Status.Parents) == 1 && isTrue(r.Status.Parents[0].Conditions, "Accepted") && isTrue(r.Status.Parents[0].Conditions, "ResolvedRefs")
	})
	conn, err := grpc.NewClient("passthrough:///"+net.JoinHostPort("127.0.109.1", strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	status := func(want healthpb.HealthCheckResponse_ServingStatus) func() bool {
		return func() bool {
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "who"})
			return err == nil && resp.Status == want
		}
	}
	sluicetest.WaitFor(t, "the gRPC call served", status(healthpb.HealthCheckResponse_SERVING))
	sluicetest.WaitFor(t, "the first load counted", func() bool { return c.Stats().Loads == 1 })

	// Endpoint churn on an h2c upstream set: the endpoint replaced by
	// another (answering NOT_SERVING), without a load.
	ip2 := fmt.Sprintf("127.0.0.%d", nextIP)
	nextIP++
	port2 := ln.Addr().(*net.TCPAddr).Port
	ln2, err := net.Listen("tcp", net.JoinHostPort(ip2, strconv.Itoa(port2)))
	if err != nil {
		t.Fatal(err)
	}
	srv2 := grpc.NewServer()
	hs2 := health.NewServer()
	hs2.SetServingStatus("who", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv2, hs2)
	go srv2.Serve(ln2)
	t.Cleanup(srv2.Stop)
	if _, err := kube.DiscoveryV1().EndpointSlices("default").Update(ctx, slice("g", port2, ip2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "the new endpoint served", status(healthpb.HealthCheckResponse_NOT_SERVING))
	sluicetest.WaitFor(t, "the upstream change counted", func() bool { return c.Stats().UpstreamPuts > 0 })
	if n := c.Stats().Loads; n != 1 {
		t.Errorf("endpoint change: %d loads, want the first alone", n)
	}
}
