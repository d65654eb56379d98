package components

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestRot13(t *testing.T) {
	rot, err := NewRot13(Rot13Options{})
	rot = builtinComp(t, rot, err)
	long := strings.Repeat("The Quick Brown Fox Jumps Over The Lazy Dog 0123456789 ", 500) // > 4 KiB buffer
	tests := []struct {
		name  string
		chain pipe.Chain
		body  string
		want  string
	}{
		{"letters only", nil, "Hello, World! zZaA", "Uryyb, Jbeyq! mMnN"},
		{"bytes kept", nil, "\x00\xff123 ÄÖ\n", "\x00\xff123 ÄÖ\n"},
		{"long", nil, long, strings.Repeat("Gur Dhvpx Oebja Sbk Whzcf Bire Gur Ynml Qbt 0123456789 ", 500)},
		{"twice is identity", pipe.Chain{rot}, long, long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, _ := NewText(TextOptions{Body: tt.body})
			url := sluicetest.NewServer(t, pipe.Handler(append(pipe.Chain{text, rot}, tt.chain...))).URL
			resp, body := builtinDo(t, "GET", url+"/", nil)
			if string(body) != tt.want {
				t.Errorf("body %.60q…, want %.60q…", body, tt.want)
			}
			if resp.ContentLength != int64(len(tt.body)) {
				t.Errorf("Content-Length %d, want %d (rot13 keeps the length)", resp.ContentLength, len(tt.body))
			}
		})
	}
}

// The source's bytes are not modified in place: a shared body survives.
func TestRot13LeavesSourceBytes(t *testing.T) {
	rot, _ := NewRot13(Rot13Options{})
	shared := []byte("abc")
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		return func(w pipe.Writer) error { _, err := w.Write(shared); return err }
	})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{src, rot})).URL
	for range 2 {
		if _, body := builtinDo(t, "GET", url+"/", nil); string(body) != "nop" {
			t.Errorf("body %q", body)
		}
	}
	if string(shared) != "abc" {
		t.Errorf("source bytes changed to %q", shared)
	}
}

// rot13 streams: a flushed part reaches the client before the source
// writes the next.
func TestRot13Streams(t *testing.T) {
	rot, _ := NewRot13(Rot13Options{})
	next := make(chan struct{})
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		return func(w pipe.Writer) error {
			io.WriteString(w, "first\n")
			if err := w.Flush(); err != nil {
				return err
			}
			<-next
			_, err := io.WriteString(w, "second\n")
			return err
		}
	})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{src, rot})).URL
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); line != "svefg\n" || err != nil {
		t.Fatalf("first part %q, %v", line, err)
	}
	close(next)
	if rest, _ := io.ReadAll(br); string(rest) != "frpbaq\n" {
		t.Errorf("rest %q", rest)
	}
}

func ExampleNewRot13() {
	text, _ := NewText(TextOptions{Body: "Why did the chicken cross the road?"})
	rot13, err := NewRot13(Rot13Options{})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{text, rot13}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	resp, err := http.Get(url + "/")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output:
	// Jul qvq gur puvpxra pebff gur ebnq?
}
