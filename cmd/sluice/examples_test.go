package main_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// The examples of examples/ that are config files (tls-site, proxy) are
// run here as their READMEs say, on addresses of the test's own: their
// files are copied into a temporary directory and their fixed ports
// replaced. (TestDocConfigs checks them as written.)

// copyExample copies examples/name into a temporary directory, replacing
// in its file config each old string of replace by the new one after
// it, and returns the directory.
func copyExample(t *testing.T, name, config string, replace ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", name))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, config)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("examples/%s/%s no longer has %q", name, config, replace[i])
		}
		text = strings.ReplaceAll(text, replace[i], replace[i+1])
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readmeCommand returns the command of the README's sh blocks that
// starts with prefix, its continued lines joined.
func readmeCommand(t *testing.T, readme, prefix string) string {
	t.Helper()
	for _, b := range codeBlocks(t, readme) {
		if b.lang != "sh" {
			continue
		}
		for i, line := range b.lines {
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			cmd := line
			for strings.HasSuffix(cmd, "\\") && i+1 < len(b.lines) {
				i++
				cmd = strings.TrimSuffix(cmd, "\\") + strings.TrimSpace(b.lines[i])
			}
			return cmd
		}
	}
	t.Fatalf("%s has no command starting %q", readme, prefix)
	return ""
}

var listenRecord = regexp.MustCompile(`msg=listening addr=(\S+)( tls=true)?`)

// TestExampleTLSSite makes the certificate as examples/tls-site/README.md
// says, serves the example, and asks for its page over HTTPS and for a
// page over plain HTTP, which redirects.
func TestExampleTLSSite(t *testing.T) {
	sluicetest.NeedTool(t, "openssl", "openssl")
	// Two ports of the test's: a config may not list 127.0.0.1:0 twice.
	ports := freePorts(t, 2)
	dir := copyExample(t, "tls-site", "sluice.yaml", "127.0.0.1:8443", "127.0.0.1:"+ports[0], "127.0.0.1:8080", "127.0.0.1:"+ports[1])
	openssl := exec.Command("sh", "-c", readmeCommand(t, "examples/tls-site/README.md", "openssl "))
	openssl.Dir = dir
	if out, err := openssl.CombinedOutput(); err != nil {
		t.Fatalf("the README's openssl command: %v\n%s", err, out)
	}
	s := start(t, "serve", "-c", filepath.Join(dir, "sluice.yaml"))
	var tlsAddr, plainAddr string
	sluicetest.WaitFor(t, "both listeners", func() bool {
		for _, m := range listenRecord.FindAllStringSubmatch(s.stderr(), -1) {
			if m[2] != "" {
				tlsAddr = m[1]
			} else {
				plainAddr = m[1]
			}
		}
		return tlsAddr != "" && plainAddr != ""
	})

	pem, err := os.ReadFile(filepath.Join(dir, "site.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("site.crt holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "localhost"},
		ForceAttemptHTTP2: true,
	}}
	resp, err := client.Get("https://" + tlsAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	index, err := os.ReadFile(filepath.Join(dir, "public", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || string(body) != string(index) {
		t.Errorf("GET https://localhost/: %d over %s, %.60q; want 200 over HTTP/2 and public/index.html", resp.StatusCode, resp.Proto, body)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=3600" {
		t.Errorf("Strict-Transport-Security = %q, want max-age=3600", got)
	}

	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	req, err := http.NewRequest("GET", "http://"+plainAddr+"/x?y=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "localhost"
	resp, _ = sluicetest.Do(t, req)
	if want := "https://localhost:" + tlsPort + "/x?y=1"; resp.StatusCode != 308 || resp.Header.Get("Location") != want {
		t.Errorf("GET http://localhost/x?y=1: %d, Location %q; want 308 and %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if code := s.stop(t, os.Interrupt); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// freePorts returns n distinct loopback ports that were free a moment
// ago, spelled for a config file.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for _, p := range sluicetest.FreePorts(t, n) {
		ports = append(ports, strconv.Itoa(p))
	}
	return ports
}

// TestExampleProxy runs examples/proxy as its README says: two servers
// of app.yaml, the proxy in front; requests go to each in turn, static
// files come from the proxy, and once one server stops every request
// is answered by the other.
func TestExampleProxy(t *testing.T) {
	ports := freePorts(t, 2)
	p1, p2 := ports[0], ports[1]
	dir := copyExample(t, "proxy", "sluice.yaml",
		"127.0.0.1:8080", "127.0.0.1:0", "127.0.0.1:9001", "127.0.0.1:"+p1, "127.0.0.1:9002", "127.0.0.1:"+p2)
	app := func(port string) *server {
		cmd := exec.Command(binary, "serve", "-c", filepath.Join(dir, "app.yaml"))
		cmd.Env = append(os.Environ(), "PORT="+port)
		return startCmd(t, cmd)
	}
	app1 := app(p1)
	app(p2)
	proxy := start(t, "serve", "-c", filepath.Join(dir, "sluice.yaml"))
	base := "http://" + proxy.addr

	seen := map[string]int{}
	for range 4 {
		resp, body := sluicetest.Get(t, base+"/")
		if resp.StatusCode != 200 {
			t.Fatalf("GET /: %d %q", resp.StatusCode, body)
		}
		seen[body]++
	}
	if seen["served by "+p1+"\n"] != 2 || seen["served by "+p2+"\n"] != 2 {
		t.Errorf("4 requests were answered %v; want each server twice", seen)
	}
	css, err := os.ReadFile(filepath.Join(dir, "static", "site.css"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := sluicetest.Get(t, base+"/static/site.css"); resp.StatusCode != 200 || body != string(css) {
		t.Errorf("GET /static/site.css: %d %.60q; want 200 and static/site.css", resp.StatusCode, body)
	}

	if code := app1.stop(t, os.Interrupt); code != 0 {
		t.Errorf("the server on %s: exit status %d", p1, code)
	}
	for range 4 {
		if resp, body := sluicetest.Get(t, base+"/"); resp.StatusCode != 200 || body != "served by "+p2+"\n" {
			t.Errorf("with %s stopped, GET /: %d %q; want 200 from %s", p1, resp.StatusCode, body, p2)
		}
	}
	if code := proxy.stop(t, os.Interrupt); code != 0 {
		t.Errorf("the proxy: exit status %d:\n%s", code, proxy.stderr())
	}
}
