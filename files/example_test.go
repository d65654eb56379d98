package files_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
)

// Serve a directory: GET / answers with its index.html.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "files-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>Hello</p>\n"), 0o644)

	h, err := files.New(dir, files.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	srv := &engine.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	fmt.Print(string(body))
	// Output:
	// 200 OK text/html; charset=utf-8
	// <p>Hello</p>
}

// Serve an fs.FS, such as an embed.FS; a directory requested without its
// trailing slash is redirected, keeping the query.
func ExampleNewFS() {
	site := fstest.MapFS{"docs/index.html": {Data: []byte("docs\n")}}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	srv := &engine.Server{Handler: files.NewFS(site, files.Options{})}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Get("http://" + ln.Addr().String() + "/docs?page=2")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"))
	// Output:
	// 301 /docs/?page=2
}

// Serve a single-page app: a path that names a file gets it, any other
// (a client-side route) gets the app's index.html, with index.html's
// validators.
func ExampleOptions_try() {
	app := fstest.MapFS{
		"index.html": {Data: []byte("<div id=app></div>\n")},
		"app.js":     {Data: []byte("render()\n")},
	}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	srv := &engine.Server{Handler: files.NewFS(app, files.Options{Try: []string{"$path", "/index.html"}})}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	for _, path := range []string{"/app.js", "/users/42"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// /app.js 200 render()
	// /users/42 200 <div id=app></div>
}
