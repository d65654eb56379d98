package main_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sluice-server/sluice/config"
)

// The deployment manifest of docs/kubernetes.md holds together: every
// object decodes; the data plane's first config loads; the controller's
// arguments are flags it takes, naming the config's admin socket and the
// pool the init container routes; its roles grant what it watches,
// updates and leases.
func TestDeployManifest(t *testing.T) {
	data, err := os.ReadFile("../../deploy/sluice-gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := gatewayv1.Install(s); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(s).UniversalDeserializer()
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var (
		deploy *appsv1.Deployment
		cm     *corev1.ConfigMap
		rules  []rbacv1.PolicyRule // the ClusterRole's and the Role's
		class  *gatewayv1.GatewayClass
	)
	for {
		var raw runtime.RawExtension
		if err := r.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		obj, _, err := dec.Decode(raw.Raw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deploy = o
		case *corev1.ConfigMap:
			cm = o
		case *rbacv1.ClusterRole:
			rules = append(rules, o.Rules...)
		case *rbacv1.Role:
			rules = append(rules, o.Rules...)
		case *gatewayv1.GatewayClass:
			class = o
		}
	}
	if deploy == nil || cm == nil || class == nil || rules == nil {
		t.Fatal("the manifest lacks the Deployment, ConfigMap, GatewayClass or roles")
	}

	// The data plane's first config loads.
	dir := t.TempDir()
	text := strings.ReplaceAll(cm.Data["sluice.yaml"], "/var/run/sluice", dir)
	cfg, err := new(config.Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte(text))
	if err != nil {
		t.Fatalf("the data plane's config: %v", err)
	}
	cfg.Close()

	// The controller's arguments.
	var ctl, pool []string
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			ctl = c.Args
		}
	}
	for _, c := range deploy.Spec.Template.Spec.InitContainers {
		if c.Name == "route-pool" {
			pool = c.Command
		}
	}
	code, _, stderr := run(t, "", append(slices.Clone(ctl), "--translate", "/dev/null")...)
	if code != 0 {
		t.Errorf("sluice-gateway %v: exit status %d: %s", ctl, code, stderr)
	}
	want := []string{
		"--admin-socket=/var/run/sluice/admin.sock",
		"--admin-state=/var/run/sluice/state.json",
		"--controller-name=" + string(class.Spec.ControllerName),
	}
	for _, p := range pool {
		if strings.Contains(p, "/") && !strings.HasPrefix(p, "/") {
			want = append(want, "--address-pool="+p)
		}
	}
	for _, w := range want {
		if !slices.Contains(ctl, w) {
			t.Errorf("the controller's arguments %v lack %s", ctl, w)
		}
	}
	if !strings.Contains(cm.Data["sluice.yaml"], "admin: {socket: /var/run/sluice/admin.sock, state: /var/run/sluice/state.json}") {
		t.Error("the data plane's admin section is not the one the controller writes")
	}

	// The roles.
	grants := func(group, resource, verb string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	for _, g := range []struct{ group, resource string }{
		{"", "namespaces"}, {"", "services"}, {"", "secrets"}, {"discovery.k8s.io", "endpointslices"},
		{"gateway.networking.k8s.io", "gatewayclasses"}, {"gateway.networking.k8s.io", "gateways"},
		{"gateway.networking.k8s.io", "httproutes"}, {"gateway.networking.k8s.io", "grpcroutes"}, {"gateway.networking.k8s.io", "referencegrants"},
	} {
		for _, verb := range []string{"list", "watch"} {
			if !grants(g.group, g.resource, verb) {
				t.Errorf("no role grants %s on %s", verb, g.resource)
			}
		}
	}
	for _, res := range []string{"gatewayclasses/status", "gateways/status", "httproutes/status", "grpcroutes/status"} {
		if !grants("gateway.networking.k8s.io", res, "update") {
			t.Errorf("no role grants update on %s", res)
		}
	}
	for _, verb := range []string{"get", "create", "update"} {
		if !grants("coordination.k8s.io", "leases", verb) {
			t.Errorf("no role grants %s on leases", verb)
		}
	}
}
