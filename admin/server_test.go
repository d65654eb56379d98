package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// fakeBackend records what the API asks of it. Its Load accepts a config
// that parses, and its sets are "app" with the hosts put there.
type fakeBackend struct {
	mu      sync.Mutex
	running []byte
	purges  []components.Purge
	app     []HostSpec
}

func (b *fakeBackend) Running() (string, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return "/etc/sluice/site.yaml", b.running
}

func (b *fakeBackend) Load(data []byte) error {
	cfg, err := new(config.Loader).Parse("/etc/sluice/site.yaml", data)
	if err != nil {
		return err
	}
	cfg.Close()
	b.mu.Lock()
	b.running = data
	b.mu.Unlock()
	return nil
}

func (b *fakeBackend) Purge(p components.Purge) (int, int, error) {
	b.mu.Lock()
	b.purges = append(b.purges, p)
	b.mu.Unlock()
	return 3, 1, nil
}

func (b *fakeBackend) Upstreams() ([]SetState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return []SetState{b.state()}, nil
}

func (b *fakeBackend) state() SetState {
	s := SetState{SetState: upstream.SetState{Name: "app", Policy: "round_robin"}}
	for _, h := range b.app {
		s.Hosts = append(s.Hosts, HostState{Name: h.Name, Weight: h.Weight, Draining: h.Drain, Up: true})
	}
	return s
}

func (b *fakeBackend) ChangeUpstream(name string, c Change) (SetState, error) {
	if name != "app" {
		return SetState{}, ErrNoSet
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.Replace {
		b.app = c.Hosts
		return b.state(), nil
	}
	for _, r := range c.Remove {
		found := false
		for i, h := range b.app {
			if h.Name == r {
				b.app = append(b.app[:i], b.app[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return SetState{}, &ChangeError{Msg: "remove: no host " + r}
		}
	}
	b.app = append(b.app, c.Add...)
	return b.state(), nil
}

const goodConfig = "routes:\n  - match: /\n    pipeline: [{text: hi}]\n"

// startUnix starts a Server on a Unix socket in a directory of the test's.
func startUnix(t *testing.T) (*Server, *fakeBackend, *sluicetest.Buffer, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	b := &fakeBackend{running: []byte(goodConfig), app: []HostSpec{{Name: "http://127.0.0.1:9001"}}}
	log, buf := sluicetest.Logger()
	s := &Server{Config: &config.Admin{Socket: filepath.Join(dir, "admin.sock"), State: filepath.Join(dir, "state", "admin.json")}, Backend: b, Logger: log, UID: -1}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.Config.Socket)
	}}}
	return s, b, buf, c
}

// call sends method path with body and decodes the JSON answer into out
// (when not nil), returning the status.
func call(t *testing.T, c *http.Client, method, url, body string, out any, fields ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Set(fields[i], fields[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" && !strings.Contains(url, "config") {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, url, ct)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, string(b)
}

func TestSocketMode(t *testing.T) {
	s, _, _, _ := startUnix(t)
	fi, err := os.Stat(s.Config.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket's mode is %v, want a socket with 0600", fi.Mode())
	}
	// A second server on the same path is refused while the first listens.
	other := &Server{Config: &config.Admin{Socket: s.Config.Socket, State: filepath.Join(t.TempDir(), "s.json")}, Backend: &fakeBackend{}, UID: -1}
	if err := other.Start(); err == nil || !strings.Contains(err.Error(), "another process listens on it") {
		other.Close()
		t.Errorf("a second server on the socket: %v, want refused", err)
	}
	// With Replace (a binary upgrade's new master), it takes over; the
	// first's Close leaves the new socket in place.
	other.Replace = true
	if err := other.Start(); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	s.Close()
	c, err := net.Dial("unix", s.Config.Socket)
	if err != nil {
		t.Fatalf("after the replaced server's Close, the new socket: %v", err)
	}
	c.Close()
	other.Close()
	if _, err := os.Lstat(s.Config.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close the socket file is there: %v", err)
	}
}

// A socket file left by a server that died is replaced.
func TestStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	s := &Server{Config: &config.Admin{Socket: path, State: path + ".json"}, Backend: &fakeBackend{}, UID: -1}
	if err := s.Start(); err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	s.Close()
}

func TestConfigAndLoad(t *testing.T) {
	s, b, log, c := startUnix(t)
	var cfg configAnswer
	if code, _ := call(t, c, "GET", "http://admin/config", "", &cfg); code != 200 || cfg.YAML != goodConfig || cfg.File != "/etc/sluice/site.yaml" {
		t.Errorf("GET /config = %d %+v", code, cfg)
	}
	if code, body := call(t, c, "GET", "http://admin/config", "", nil, "Accept", "application/yaml"); code != 200 || body != goodConfig {
		t.Errorf("GET /config as YAML = %d %q", code, body)
	}

	bad := "routes:\n  - match: /\n    pipeline: [{txet: hi}]\n  - match: x\n    pipeline: [echo]\n"
	var e errorBody
	code, _ := call(t, c, "POST", "http://admin/load", bad, &e)
	if code != 400 || len(e.Errors) != 2 || e.Errors[0].Line != 3 || e.Errors[0].File != "/etc/sluice/site.yaml" || !strings.Contains(e.Errors[0].Message, "unknown component") || e.Errors[1].Line != 4 {
		t.Errorf("POST /load of a bad config = %d %+v, want 400 with both errors and their lines", code, e)
	}
	if _, data := b.Running(); string(data) != goodConfig {
		t.Errorf("after a bad load the running config is %q", data)
	}
	if code, _ := call(t, c, "POST", "http://admin/load", "", &e); code != 400 {
		t.Errorf("POST /load of nothing = %d, want 400", code)
	}

	next := goodConfig + "  - match: /new\n    pipeline: [{text: new}]\n"
	if code, body := call(t, c, "POST", "http://admin/load", next, nil); code != 200 {
		t.Fatalf("POST /load = %d %s", code, body)
	}
	st, err := ReadState(s.Config.State)
	if err != nil || st.Config != next || st.File != "/etc/sluice/site.yaml" {
		t.Errorf("the state after a load: %+v, %v", st, err)
	}
	if fi, err := os.Stat(s.Config.State); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the state file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if !strings.Contains(log.String(), "admin: config loaded") || !strings.Contains(log.String(), "by=\"uid=") {
		t.Errorf("the log does not say who loaded the config:\n%s", log)
	}
}

func TestUpstreams(t *testing.T) {
	s, _, log, c := startUnix(t)
	var sets struct{ Sets []SetState }
	if code, _ := call(t, c, "GET", "http://admin/upstreams", "", &sets); code != 200 || len(sets.Sets) != 1 || sets.Sets[0].Name != "app" {
		t.Errorf("GET /upstreams = %d %+v", code, sets)
	}
	tests := []struct {
		method, path, body string
		status             int
		hosts              []string // the set's hosts after
	}{
		{"GET", "/upstreams/app", "", 200, []string{"http://127.0.0.1:9001"}},
		{"GET", "/upstreams/nope", "", 404, nil},
		{"PUT", "/upstreams/app", `{"hosts": [{"name": "http://127.0.0.1:9002", "weight": 2}]}`, 200, []string{"http://127.0.0.1:9002"}},
		{"PUT", "/upstreams/app", `{"hosts": []}`, 400, nil},
		{"PUT", "/upstreams/app", `{"add": [{"name": "x"}]}`, 400, nil},
		{"PATCH", "/upstreams/app", `{"add": [{"name": "http://127.0.0.1:9003"}]}`, 200, []string{"http://127.0.0.1:9002", "http://127.0.0.1:9003"}},
		{"PATCH", "/upstreams/app", `{"remove": ["http://127.0.0.1:9009"]}`, 400, nil},
		{"PATCH", "/upstreams/app", `{"remove": ["http://127.0.0.1:9002"]}`, 200, []string{"http://127.0.0.1:9003"}},
		{"PATCH", "/upstreams/app", `{}`, 400, nil},
		{"PATCH", "/upstreams/app", `{"hosts": []}`, 400, nil},
		{"PATCH", "/upstreams/app", `{"ad": []}`, 400, nil},
		{"PATCH", "/upstreams/nope", `{"remove": ["a"]}`, 404, nil},
		{"DELETE", "/upstreams/app", "", 405, nil},
		{"GET", "/nowhere", "", 404, nil},
	}
	for _, tt := range tests {
		var out struct {
			SetState
			Error string
		}
		code, body := call(t, c, tt.method, "http://admin"+tt.path, tt.body, &out)
		if code != tt.status {
			t.Errorf("%s %s %s = %d %s, want %d", tt.method, tt.path, tt.body, code, body, tt.status)
			continue
		}
		if code >= 400 && out.Error == "" {
			t.Errorf("%s %s %s = %d without an error: %s", tt.method, tt.path, tt.body, code, body)
		}
		if tt.hosts != nil {
			var got []string
			for _, h := range out.Hosts {
				got = append(got, h.Name)
			}
			if strings.Join(got, " ") != strings.Join(tt.hosts, " ") {
				t.Errorf("%s %s %s: hosts %q, want %q", tt.method, tt.path, tt.body, got, tt.hosts)
			}
		}
	}
	st, err := ReadState(s.Config.State)
	if err != nil || len(st.Upstreams["app"]) != 1 || st.Upstreams["app"][0].Name != "http://127.0.0.1:9003" {
		t.Errorf("the state after the changes: %+v, %v", st, err)
	}
	for _, want := range []string{"admin: upstream set changed", "set=app", "method=PATCH", "remove=http://127.0.0.1:9002"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

func TestPurge(t *testing.T) {
	_, b, _, c := startUnix(t)
	tests := []struct {
		body   string
		status int
	}{
		{`{"host": "example.com", "urls": ["/a", "https://example.com/b?x"], "prefixes": ["/img/"], "tags": ["t1"]}`, 200},
		{`{"urls": ["/a"]}`, 400},
		{`{"host": "example.com", "urls": ["https://other.example/a"]}`, 403},
		{`{"host": "example.com", "tags": ["a b"]}`, 400},
		{`{"host": "example.com", "url": ["/a"]}`, 400},
	}
	for _, tt := range tests {
		if code, body := call(t, c, "POST", "http://admin/purge", tt.body, nil); code != tt.status {
			t.Errorf("POST /purge %s = %d %s, want %d", tt.body, code, body, tt.status)
		}
	}
	if len(b.purges) != 1 {
		t.Fatalf("purges = %+v, want one", b.purges)
	}
	p := b.purges[0]
	if p.Host != "example.com" || strings.Join(p.URLs, " ") != "/a /b?x" || strings.Join(p.Prefixes, " ") != "/img/" || strings.Join(p.Tags, " ") != "t1" {
		t.Errorf("purge = %+v", p)
	}
}

// On TCP, every request needs a token of the section; the log names the
// token, never shows it.
func TestTokens(t *testing.T) {
	log, buf := sluicetest.Logger()
	s := &Server{Config: &config.Admin{Listen: "127.0.0.1:0", State: filepath.Join(t.TempDir(), "s.json"),
		Tokens: map[string]string{"ci": "0123456789abcdef0123", "ops": "fedcba9876543210fedc"}},
		Backend: &fakeBackend{running: []byte(goodConfig)}, Logger: log}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := "http://" + s.Addr().String()
	tests := []struct {
		auth   string
		status int
	}{
		{"", 401},
		{"Bearer", 401},
		{"Bearer wrong-token-wrong-token", 401},
		{"Bearer 0123456789abcdef012", 401}, // a prefix
		{"Basic 0123456789abcdef0123", 401},
		{"Bearer 0123456789abcdef0123", 200},
		{"bearer fedcba9876543210fedc", 200},
	}
	for _, tt := range tests {
		var fields []string
		if tt.auth != "" {
			fields = []string{"Authorization", tt.auth}
		}
		code, body := call(t, http.DefaultClient, "POST", url+"/load", goodConfig, nil, fields...)
		if code != tt.status {
			t.Errorf("Authorization %q: %d %s, want %d", tt.auth, code, body, tt.status)
		}
	}
	if !strings.Contains(buf.String(), `by="token=ci"`) || !strings.Contains(buf.String(), `by="token=ops"`) {
		t.Errorf("the log does not name the tokens:\n%s", buf)
	}
	if strings.Contains(buf.String(), "0123456789abcdef") || strings.Contains(buf.String(), "fedcba9876543210") {
		t.Errorf("the log shows a token:\n%s", buf)
	}
}
