package main_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// k8sObject holds what TestKubernetesManifest reads of the objects in
// contrib/kubernetes/sluice.yaml.
type k8sObject struct {
	Kind     string                `yaml:"kind"`
	Metadata struct{ Name string } `yaml:"metadata"`
	Data     map[string]string     `yaml:"data"` // ConfigMap
	Spec     struct {
		Template struct { // Deployment
			Spec struct {
				TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
				Containers                    []k8sContainer `yaml:"containers"`
				Volumes                       []struct {
					Name      string                `yaml:"name"`
					ConfigMap struct{ Name string } `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct { // Service
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  k8sProbe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep struct{ Seconds int } `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// The Kubernetes manifest of docs/deploy.md holds together: its
// ConfigMap's config passes `sluice check`; sluice, run with the
// container's arguments on it, answers the probes' paths with 200 and
// stops at SIGTERM with the grace period the arguments give, which fits
// in the pod's terminationGracePeriodSeconds after the preStop sleep;
// the probes, the Service and the config name the container's port.
func TestKubernetesManifest(t *testing.T) {
	data, err := os.ReadFile("../../contrib/kubernetes/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		objs[o.Kind] = o
	}
	cm, deploy, svc := objs["ConfigMap"], objs["Deployment"], objs["Service"]
	pod := deploy.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(cm.Data) != 1 || len(svc.Spec.Ports) != 1 || len(pod.Volumes) != 1 {
		t.Fatalf("want a ConfigMap of one file, a Deployment of one container and one volume, a Service of one port; got %+v", objs)
	}
	c := pod.Containers[0]

	// The config file the container is given is the ConfigMap's.
	var key, config string
	for key, config = range cm.Data {
	}
	if pod.Volumes[0].ConfigMap.Name != cm.Metadata.Name || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != pod.Volumes[0].Name {
		t.Fatalf("the container does not mount the ConfigMap: %+v", pod)
	}
	i := slices.Index(c.Args, "-c")
	if i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != path.Join(c.VolumeMounts[0].MountPath, key) {
		t.Fatalf("args %q do not name the ConfigMap's file %s in %s", c.Args, key, c.VolumeMounts[0].MountPath)
	}

	// The probes and the Service reach the port the config listens on.
	if len(c.Ports) != 1 {
		t.Fatalf("container ports %+v, want one", c.Ports)
	}
	port := c.Ports[0]
	for _, p := range []string{c.ReadinessProbe.HTTPGet.Port, c.LivenessProbe.HTTPGet.Port, svc.Spec.Ports[0].TargetPort} {
		if p != port.Name {
			t.Errorf("port %q is not the container's %q", p, port.Name)
		}
	}
	if listen := `listen: ":` + strconv.Itoa(port.ContainerPort) + `"`; !strings.Contains(config, listen) {
		t.Errorf("the config does not say %s", listen)
	}

	// The grace period fits: preStop's sleep, then sluice's
	// --shutdown-grace, within terminationGracePeriodSeconds.
	j := slices.Index(c.Args, "--shutdown-grace")
	if j < 0 || j+1 >= len(c.Args) {
		t.Fatalf("args %q set no --shutdown-grace", c.Args)
	}
	grace, err := time.ParseDuration(c.Args[j+1])
	if err != nil {
		t.Fatal(err)
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if total := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; preStop+grace >= total {
		t.Errorf("preStop %v + --shutdown-grace %v leaves nothing of terminationGracePeriodSeconds %v", preStop, grace, total)
	}

	// The site's files are the image's, under /srv/www: here a directory
	// of the test's.
	dir := t.TempDir()
	site := filepath.Join(dir, "www")
	if err := os.Mkdir(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(config, "/srv/www"); n != 1 {
		t.Fatalf("the config names /srv/www %d times, want once (the files root)", n)
	}
	file := filepath.Join(dir, key)
	if err := os.WriteFile(file, []byte(strings.Replace(config, "/srv/www", site, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := sluice(t, "check", "-c", file); r.code != 0 || r.stderr != "" {
		t.Fatalf("sluice check: exit %d\n%s", r.code, r.stderr)
	}

	args := slices.Clone(c.Args)
	args[i+1] = file
	s := start(t, append(args, "--listen", "127.0.0.1:0")...)
	for _, p := range []string{c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path} {
		if code, _, body := get(t, "http://"+s.addr+p); code != 200 {
			t.Errorf("probe GET %s: %d %q, want 200", p, code, body)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status at SIGTERM = %d, want 0\n%s", code, s.stderr())
	}
	if want := "grace=" + grace.String(); !strings.Contains(s.stderr(), want) {
		t.Errorf("the shutdown log lacks %s:\n%s", want, s.stderr())
	}
}
