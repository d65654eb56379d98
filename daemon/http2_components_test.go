//lint:file-ignore SA1019 the test drives x/net/http2's client on purpose.

package daemon

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/http2"

	"github.com/sluice-server/sluice/sluicetest"
)

// The components run per HTTP/2 stream as they do per HTTP/1.1 request:
// files with a range, compress, cgi, proxy and an error page, asked by Go's
// HTTP/2 client and by curl --http2.
func TestHTTP2Components(t *testing.T) {
	site := newTLSSite(t)
	pub := filepath.Join(site.dir, "public")
	os.MkdirAll(pub, 0o755)
	big := bytes.Repeat([]byte("0123456789"), 10000)
	writeFile(t, filepath.Join(pub, "big.txt"), string(big))
	writeFile(t, filepath.Join(site.dir, "404.html"), "<p>no such page</p>\n")
	script := filepath.Join(site.dir, "env.cgi")
	writeFile(t, script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho \"$SERVER_PROTOCOL $REQUEST_METHOD $QUERY_STRING\"\ncat\n")
	os.Chmod(script, 0o755)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Keep-Alive", "timeout=5") // hop-by-hop: not passed on
		fmt.Fprintf(w, "upstream %s %s via=%q", r.Proto, r.URL.Path, r.Header.Get("Via"))
	}))
	defer up.Close()
	writeFile(t, site.file, `listen:
  - {address: "127.0.0.1:0", tls: {cert: a.example.crt, key: a.example.key}}
error_pages:
  404: ./404.html
routes:
  - match: /up/
    pipeline:
      - proxy: `+up.URL+`
  - match: /cgi
    pipeline:
      - cgi: ./env.cgi
  - match: /
    pipeline:
      - files: ./public
      - compress: [gzip]
`)
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	base := "https://" + onlyAddr(t, s).String()
	tr := &http2.Transport{TLSClientConfig: site.ca.ClientConfig("a.example"), DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	do := func(method, path, body string, fields ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(fields); i += 2 {
			req.Header.Set(fields[i], fields[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s %s: %s", method, path, resp.Proto)
		}
		return resp, b
	}

	resp, b := do("GET", "/big.txt", "", "Range", "bytes=1000-1009")
	if resp.StatusCode != 206 || string(b) != "0123456789" || resp.Header.Get("Content-Range") != "bytes 1000-1009/100000" {
		t.Errorf("range: %d %q %q", resp.StatusCode, b, resp.Header.Get("Content-Range"))
	}
	resp, b = do("GET", "/big.txt", "", "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("compress: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	} else if zr, err := gzip.NewReader(bytes.NewReader(b)); err != nil {
		t.Error(err)
	} else if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, big) {
		t.Errorf("compress: %d bytes after gunzip, want %d", len(plain), len(big))
	}
	resp, b = do("POST", "/cgi?x=1", "posted")
	if resp.StatusCode != 200 || string(b) != "HTTP/2.0 POST x=1\nposted" {
		t.Errorf("cgi: %d %q", resp.StatusCode, b)
	}
	resp, b = do("GET", "/up/x", "")
	if resp.StatusCode != 200 || string(b) != `upstream HTTP/1.1 /up/x via="1.1 sluice"` || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("proxy: %d %q, Keep-Alive %q", resp.StatusCode, b, resp.Header.Get("Keep-Alive"))
	}
	resp, b = do("GET", "/missing", "")
	if resp.StatusCode != 404 || !strings.Contains(string(b), "no such page") {
		t.Errorf("error page: %d %q", resp.StatusCode, b)
	}

	curl := sluicetest.HaveTool(t, "curl", "curl")
	if curl == "" {
		return
	}
	ca := site.ca.WriteFiles(t, t.TempDir())
	out, err := exec.Command(curl, "-sS", "--http2", "--cacert", ca, "--resolve", "a.example:"+portOf(base)+":127.0.0.1",
		"-r", "0-9", "-w", " %{http_version} %{response_code}", "https://a.example:"+portOf(base)+"/big.txt").CombinedOutput()
	if err != nil || string(out) != "0123456789 2 206" {
		t.Errorf("curl --http2: %q, %v", out, err)
	}
}

func portOf(url string) string { return url[strings.LastIndex(url, ":")+1:] }
