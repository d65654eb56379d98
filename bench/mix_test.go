package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/bench/mixsite"
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
