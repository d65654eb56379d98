package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The server links no gRPC: google.golang.org/grpc and protobuf are the
// proxy tests' (a real gRPC client and server through the proxy), not
// the binary's.
func TestNoGRPCDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(pkg, "google.golang.org/") {
			t.Errorf("sluice depends on %s", pkg)
		}
	}
}
