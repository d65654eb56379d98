//go:build conformance

package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestKustomize checks gateway/deploy as a kustomize base with the kubectl
// that tools/kube/build.sh builds: `kubectl kustomize` of it gives the
// objects of sluice-gateway.yaml, each unchanged, and an overlay that
// names the base and sets the images gets them in the Deployment. It
// needs no cluster, only the binary (and SLUICE_CONFORMANCE=1, as the
// other tests of this package).
func TestKustomize(t *testing.T) {
	if os.Getenv(insideEnv) != "" {
		t.Skip("the outer run checks the base")
	}
	kubectl := filepath.Join(needCluster(t), "bin", "kubectl")
	base, err := filepath.Abs("../deploy")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(base, "sluice-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeObjects(t, raw)

	got := decodeObjects(t, kustomize(t, kubectl, base))
	if !reflect.DeepEqual(keys(got), keys(want)) {
		t.Fatalf("kubectl kustomize gives the objects %v, want those of sluice-gateway.yaml: %v", keys(got), keys(want))
	}
	for k, obj := range want {
		if !reflect.DeepEqual(got[k], obj) {
			t.Errorf("kubectl kustomize changed %s:\n got %v\nwant %v", k, got[k], obj)
		}
	}

	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	kz := fmt.Sprintf(`resources: [%s]
images:
  - {name: registry.example/sluice, newName: registry.example.com/sluice, newTag: v1.2.3}
  - {name: registry.example/sluice-gateway, newName: registry.example.com/sluice-gateway, newTag: v1.2.3}
`, rel)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kz), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := decodeObjects(t, kustomize(t, kubectl, overlay))
	deploy, ok := objs["Deployment sluice-gateway/sluice-gateway"]
	if !ok {
		t.Fatalf("the overlay has no Deployment sluice-gateway/sluice-gateway: %v", keys(objs))
	}
	images := map[string]string{}
	spec := deploy["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		images[c["name"].(string)] = c["image"].(string)
	}
	wantImages := map[string]string{
		"sluice":     "registry.example.com/sluice:v1.2.3",
		"controller": "registry.example.com/sluice-gateway:v1.2.3",
	}
	if !reflect.DeepEqual(images, wantImages) {
		t.Errorf("the overlay's containers run %v, want %v", images, wantImages)
	}
}

// kustomize runs `kubectl kustomize dir` and returns its output.
func kustomize(t *testing.T, kubectl, dir string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.Bytes())
	}
	return out
}

// decodeObjects decodes a stream of YAML documents into objects keyed by
// "Kind namespace/name" (or "Kind name" for one without a namespace).
func decodeObjects(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := fmt.Sprintf("%v %v", obj["kind"], meta["name"])
		if ns, ok := meta["namespace"]; ok {
			key = fmt.Sprintf("%v %v/%v", obj["kind"], ns, meta["name"])
		}
		if _, dup := objs[key]; dup {
			t.Fatalf("%s twice", key)
		}
		objs[key] = obj
	}
	return objs
}

func keys(m map[string]map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
