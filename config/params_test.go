package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A route matching /article/{id:int} renders its template with the
// captured id, over a real socket: the value is the decoded segment,
// html/template escapes it, a segment that is not an integer is 400
// before the template runs, and an exact path beats the capture.
func TestPathParameters(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := testLoader().Load(filepath.Join(wd, "testdata", "params.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	url := sluicetest.NewServer(t, cfg.Handler()).URL
	for _, tt := range []struct {
		path   string
		status int
		body   string
	}{
		{"/article/42", 200, "<p>article 42 on /article/42</p>\n"},
		{"/article/%34%32", 200, "<p>article 42 on /article/42</p>\n"},
		{"/article/7/%3Cscript%3Ealert(1)%3C%2Fscript%3E", 400, "400 Bad Request: encoded slash in path\n"},
		{"/article/7/%3Cscript%3E", 200, "<p>article 7, slug &lt;script&gt; on /article/7/&lt;script&gt;</p>\n"},
		{"/article/abc", 400, "400 Bad Request: path parameter id: not an integer\n"},
		{"/article/abc/x", 400, "400 Bad Request: path parameter id: not an integer\n"},
		{"/article/new", 200, "a form\n"},
		{"/article/", 200, "home\n"},
		{"/article/1/2/3", 200, "home\n"},
		{"/about", 200, "a page\n"},
	} {
		resp, body := sluicetest.Get(t, url+tt.path)
		if resp.StatusCode != tt.status || body != tt.body {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, resp.StatusCode, body, tt.status, tt.body)
		}
	}
	req, body := sluicetest.Get(t, url+"/article/abc")
	if ct := req.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("400 for a bad parameter: Content-Type %q (%q)", ct, body)
	}
}
