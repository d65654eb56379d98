package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/mixsite"
)

// The peer answers the mix's three kinds of page, and refuses a bad id
// and a missing row.
func TestRoutes(t *testing.T) {
	dir := t.TempDir()
	if err := mixsite.Write(dir); err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(dir, "sqlite", "", 4, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	title, _ := mixsite.Row(4711)
	for _, c := range []struct {
		path, want string
		status     int
	}{
		{"/", "/dynamic/article/1", 200},
		{"/static/about.html", "<h1>About</h1>", 200},
		{"/template/products?q=x", "<td>/template/products</td>", 200},
		{"/template/nope", "", 404},
		{"/dynamic/article/4711", "<h1>" + title + "</h1>", 200},
		{"/dynamic/article/abc", "", 400},
		{"/dynamic/article/10001", "", 404},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d, body has %q: %v; want %d", c.path, resp.StatusCode, c.want, strings.Contains(string(body), c.want), c.status)
		}
	}
}
