package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docSection returns the fenced blocks of the section of a Markdown file
// under heading, by language (yaml, sh), in order.
func docSection(t *testing.T, file, heading string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no section %q", file, heading)
	}
	text = text[i+len(heading)+2:]
	if j := regexp.MustCompile(`(?m)^#{1,3} `).FindStringIndex(text); j != nil {
		text = text[:j[0]]
	}
	blocks := map[string][]string{}
	for _, m := range regexp.MustCompile("(?s)```(\\w+)\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks[m[1]] = append(blocks[m[1]], m[2])
	}
	return blocks
}

// startInstance starts `sluice serve -c app` with PORT and INSTANCE in
// its environment.
func startInstance(t *testing.T, app, port, name string) *server {
	t.Helper()
	cmd := exec.Command(binary, "serve", "-c", app)
	cmd.Env = append(os.Environ(), "PORT="+port, "INSTANCE="+name)
	return startCmd(t, cmd)
}

// The section of docs/deploy.md that does the seed's proxying master
// with Sluice holds: its instances, started with its commands (on ports
// of the test's), serve behind its front config; an instance stopped
// under requests costs the clients nothing and is taken out by the
// health check; started again on its port, it is brought back.
func TestDeployProxyingMaster(t *testing.T) {
	blocks := docSection(t, "../../docs/deploy.md", "### The seed's proxying master, with Sluice")
	if len(blocks["yaml"]) != 2 || len(blocks["sh"]) != 1 {
		t.Fatalf("want two yaml blocks (app.yaml, front.yaml) and one sh block; got %q", blocks)
	}
	dir := t.TempDir()
	app, front := filepath.Join(dir, "app.yaml"), filepath.Join(dir, "front.yaml")
	writeConfig(t, app, blocks["yaml"][0])
	frontConfig := blocks["yaml"][1]

	// The commands: the instances' first, the front's last.
	lines := strings.Split(strings.TrimSpace(blocks["sh"][0]), "\n")
	instanceLine := regexp.MustCompile(`^PORT=(\d+) INSTANCE=(\w+) sluice serve -c app\.yaml &$`)
	if lines[len(lines)-1] != "sluice serve -c front.yaml" {
		t.Fatalf("the last command is %q, want the front's", lines[len(lines)-1])
	}
	type instance struct {
		name, addr string
		s          *server
	}
	var instances []*instance
	for _, line := range lines[:len(lines)-1] {
		m := instanceLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("command %q does not start an instance", line)
		}
		in := &instance{name: m[2]}
		in.s = startInstance(t, app, "0", in.name)
		in.addr = in.s.addr
		// The front's upstream for the documented port is the instance's.
		doc := "http://127.0.0.1:" + m[1]
		if !strings.Contains(frontConfig, doc) {
			t.Fatalf("front.yaml does not name %s", doc)
		}
		frontConfig = strings.Replace(frontConfig, doc, "http://"+in.addr, 1)
		instances = append(instances, in)
	}
	if len(instances) < 2 {
		t.Fatalf("%d instances; the section should start several", len(instances))
	}
	writeConfig(t, front, frontConfig)
	f := start(t, "serve", "-c", front, "--listen", "127.0.0.1:0")

	// served asks the front n times, and returns who answered each time;
	// every request must succeed.
	served := func(n int) map[string]int {
		t.Helper()
		by := map[string]int{}
		for range n {
			code, _, body := get(t, "http://"+f.addr+"/")
			name, ok := strings.CutPrefix(body, "served by ")
			if code != 200 || !ok {
				t.Fatalf("GET through the front: %d %q", code, body)
			}
			by[strings.TrimSuffix(name, "\n")]++
		}
		return by
	}
	if by := served(30); len(by) != len(instances) {
		t.Fatalf("30 requests were served by %v; want every instance", by)
	}

	// One instance stops: no request fails, and the health check takes
	// it out.
	gone := instances[1]
	if code := gone.s.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("instance %s exited %d", gone.name, code)
	}
	if by := served(30); by[gone.name] != 0 {
		t.Fatalf("the stopped instance served %v", by)
	}
	f.waitLog(t, `"proxy: upstream down: health check failed" upstream=http://`+gone.addr, 1)

	// Started again on its port, it is brought back and served again.
	back := startInstance(t, app, strings.TrimPrefix(gone.addr, "127.0.0.1:"), gone.name)
	if back.addr != gone.addr {
		t.Fatalf("the instance came back on %s, not %s", back.addr, gone.addr)
	}
	f.waitLog(t, `"proxy: upstream up again: health check passed" upstream=http://`+gone.addr, 1)
	deadline := time.Now().Add(20 * time.Second)
	for served(len(instances))[gone.name] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("instance %s, back, is never served:\n%s", gone.name, f.stderr())
		}
	}
}
