package bench

import (
	"bytes"
	"html/template"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/bench/mixsite"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// The mix gives each class of route a third of the requests.
func TestMixTargets(t *testing.T) {
	weight := map[string]int{}
	for _, tg := range mixTargets(false) {
		weight[tg.Class] += tg.Weight
	}
	if weight[classStatic] != weight[classTemplate] || weight[classTemplate] != weight[classDynamic] || len(weight) != 3 {
		t.Errorf("weights by class %v, want three equal", weight)
	}
	for _, tg := range mixTargets(true) {
		if tg.Class != classStatic {
			t.Errorf("static-only mix has %+v", tg)
		}
	}
}

// wrk, driven by wrkScript, asks for the mix's pages in the mix's
// proportions, and for articles across the whole table.
func TestWrkScript(t *testing.T) {
	wrk := sluicetest.NeedTool(t, "wrk", "Debian package wrk")
	var mu sync.Mutex
	count := map[string]int{}
	ids := map[int]bool{}
	srv := &engine.Server{Handler: engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		p := string(r.Path)
		mu.Lock()
		if n, ok := strings.CutPrefix(p, "/dynamic/article/"); ok {
			id, err := strconv.Atoi(n)
			if err != nil || id < 1 || id > mixsite.Articles {
				id = -1
			}
			ids[id] = true
			p = "/dynamic/article/"
		}
		count[p]++
		mu.Unlock()
		w.WriteString("ok\n")
	})}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	script := filepath.Join(t.TempDir(), "mix.lua")
	if err := os.WriteFile(script, []byte(wrkScript(mixTargets(false), mixSeed)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wrk, "-t1", "-c2", "-d2s", "-s", script, "http://"+ln.Addr().String()+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range count {
		total += n
	}
	if total < 600 {
		t.Fatalf("wrk made %d requests in two seconds: %v\n%s", total, count, out)
	}
	// A third to each class (each about 3.5 standard deviations wide at
	// 600 requests); every page asked.
	class := map[string]int{}
	for _, p := range mixsite.Pages {
		for _, path := range []string{"/static/" + p + ".html", "/template/" + p} {
			if count[path] == 0 {
				t.Errorf("%s never asked for", path)
			}
			class[strings.Split(path, "/")[1]] += count[path]
		}
	}
	class["dynamic"] = count["/dynamic/article/"]
	for c, n := range class {
		if n < total/3*8/10 || n > total/3*12/10 {
			t.Errorf("%s: %d of %d requests, want about a third", c, n, total)
		}
	}
	if ids[-1] || len(ids) < min(count["/dynamic/article/"], mixsite.Articles)/2 {
		t.Errorf("%d distinct article ids in %d requests (an id out of range: %v)", len(ids), count["/dynamic/article/"], ids[-1])
	}
	if len(count) != 2*len(mixsite.Pages)+1 {
		t.Errorf("paths asked: %v", count)
	}
}

// Sluice's mix configuration loads and serves the site: the static and
// template pages, and the article page, byte for byte the one the
// net/http peer's template makes from the same row; a bad id is 400, a
// missing row 404.
func TestSluiceMixConfig(t *testing.T) {
	dir := t.TempDir()
	if err := mixsite.Write(dir); err != nil {
		t.Fatal(err)
	}
	var p peers.Peer
	for _, q := range peers.Mix() {
		if q.Name == "sluice-mix" {
			p = q
		}
	}
	text, err := p.Config(peers.Env{Host: "127.0.0.1", Port: 1, Root: dir, DB: "sqlite", DSN: filepath.Join(dir, mixsite.DBFile)})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sluice-mix.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	srv := &engine.Server{Handler: cfg.Handler()}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	title, text4711 := mixsite.Row(4711)
	var want bytes.Buffer
	template.Must(template.New("a").Parse(mixsite.ArticleTemplate)).Execute(&want, struct {
		ID          int
		Title, Text string
	}{4711, title, text4711})
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/", 200, "/dynamic/article/1"},
		{"/static/contact.html", 200, "<h1>Contact</h1>"},
		{"/template/products?x=1", 200, "<td>/template/products</td>"},
		{"/dynamic/article/4711", 200, want.String()},
		{"/dynamic/article/abc", 400, ""},
		{"/dynamic/article/10001", 404, ""},
	} {
		resp, err := http.Get("http://" + ln.Addr().String() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d, want %d and a body with %q; got\n%s", c.path, resp.StatusCode, c.status, c.want, body)
		}
		if c.path == "/dynamic/article/4711" && string(body) != want.String() {
			t.Errorf("the article page differs from the net/http peer's:\n%s\nwant\n%s", body, want.String())
		}
	}
}
