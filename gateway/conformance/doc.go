// Package conformance runs the Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against sluice-gateway and a
// Sluice data plane, on a Kubernetes control plane that tools/kube builds.
//
// The package holds no code: its one test, TestConformance, is built only
// with the build tag "conformance" (the suite's dependencies are large) and
// runs only with SLUICE_CONFORMANCE=1, as root, with etcd on the PATH and
// the binaries of tools/kube/build.sh in place:
//
//	cd gateway
//	SLUICE_CONFORMANCE=1 go test -tags conformance -timeout 90m -v ./conformance \
//	    -args -report-output=$PWD/conformance-report.yaml
//
// It starts tools/kube's kubecluster, which runs the test binary again inside
// the cluster's network namespace. There the test routes the Gateways' address
// pool (10.246.0.0/24) to the namespace, starts `sluice serve` with an admin
// socket and `sluice-gateway` beside it, creates the GatewayClass "sluice" and
// runs the suite's GATEWAY-HTTP profile with the features the GatewayClass's
// status claims. The suite's own flags (-run-test, -skip-tests,
// -supported-features, -debug, -report-output...) go after -args.
package conformance
