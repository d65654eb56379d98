package cache

import (
	"html/template"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// An answer whose content an error page replaces never runs that
// content: it must not be what lets go of a hold on a 2xx body. Requests
// collapsed onto a fetch and hits get answers that read nothing of the
// body (304, 412, 416, HEAD), under a 4xx error page, and once the
// response is banned every chunk of the arena must be back.
func TestNoHoldLeftBehind(t *testing.T) {
	if *everyOnDisk {
		t.Skip("bodies in memory")
	}
	tests := []struct {
		name      string
		collapsed bool // joins the fetch while it streams; else a hit after it
		method    string
		fields    []string
		want      int
	}{
		{"collapsed If-Match fails", true, "GET", []string{"If-Match", `"zzz"`}, http.StatusPreconditionFailed},
		{"collapsed If-None-Match matches", true, "GET", []string{"If-None-Match", `"a"`}, http.StatusNotModified},
		{"collapsed HEAD", true, "HEAD", nil, http.StatusOK},
		{"collapsed GET", true, "GET", nil, http.StatusOK},
		{"hit If-Match fails", false, "GET", []string{"If-Match", `"zzz"`}, http.StatusPreconditionFailed},
		{"hit Range unsatisfiable", false, "GET", []string{"Range", "bytes=70000-"}, http.StatusRequestedRangeNotSatisfiable},
		{"hit If-None-Match matches", false, "GET", []string{"If-None-Match", `"a"`}, http.StatusNotModified},
		{"hit HEAD", false, "HEAD", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			pages, err := pipe.NewErrorPages(map[string]*template.Template{"4xx": template.Must(template.New("4xx").Parse("client error"))})
			if err != nil {
				t.Fatal(err)
			}
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			if !tt.collapsed {
				close(release)
			}
			src := pipe.Source(func(c *pipe.Conn) pipe.Content {
				c.Header().Set("Cache-Control", "max-age=600")
				c.Header().Set("ETag", `"a"`)
				c.Header().SetContentLength(65536)
				return func(w pipe.Writer) error {
					w.Write(make([]byte, 1024))
					w.Flush()
					entered <- struct{}{}
					<-release
					_, err := w.Write(make([]byte, 65536-1024))
					return err
				}
			})
			srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pages, x, src}))
			send := func(method string, fields ...string) <-chan int {
				status := make(chan int, 1)
				go func() {
					req, _ := http.NewRequest(method, srv.URL+"/r", nil)
					for i := 0; i+1 < len(fields); i += 2 {
						req.Header.Set(fields[i], fields[i+1])
					}
					resp, err := sluicetest.Client.Do(req)
					if err != nil {
						status <- 0
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status <- resp.StatusCode
				}()
				return status
			}
			leader := send("GET")
			<-entered
			if !tt.collapsed {
				if got := <-leader; got != http.StatusOK {
					t.Fatalf("first request: %d", got)
				}
			}
			second := send(tt.method, tt.fields...)
			if tt.collapsed {
				// Counted as it joins, before it is answered.
				sluicetest.WaitFor(t, "the second request to join the fetch", func() bool {
					return x.Stats().Collapsed == 1
				})
				close(release)
				if got := <-leader; got != http.StatusOK {
					t.Fatalf("first request: %d", got)
				}
			}
			if got := <-second; got != tt.want {
				t.Fatalf("second request: %d, want %d", got, tt.want)
			}
			if st := x.Stats(); !tt.collapsed && st.Hits != 1 {
				t.Fatalf("%d hits: the second request was no hit", st.Hits)
			}
			x.BanPrefix(strings.TrimPrefix(srv.URL, "http://"), "/")
			sluicetest.WaitFor(t, "every chunk back in the arena", func() bool {
				_, _, _, out := x.arena.stats()
				return out == 0
			})
		})
	}
}
