package components_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Two components registered as a program that embeds Sluice would: a
// source with a path option and a logger, and a pipe that may stop the
// pipeline.

type stampOptions struct {
	Text   string       `yaml:"text"`
	File   string       `yaml:"file"`
	Repeat int          `yaml:"repeat"`
	Extra  *stampExtra  `yaml:"extra"` // a path within an option
	Logger *slog.Logger `yaml:"-"`
}

type stampExtra struct {
	File string `yaml:"file"`
}

type teapotOptions struct {
	Path string `yaml:"path"`
}

func init() {
	components.Register(components.Registration{
		Name: "stamp", Kind: components.KindSource, Scalar: "text", Paths: []string{"file", "extra.file"},
		Example: `stamp: {file: ./stamp.txt, repeat: 2}`,
	}, func(o stampOptions, x components.Context) (pipe.Component, error) {
		if o.Text == "" && o.File == "" {
			return nil, errors.New("text or file is required")
		}
		body := []byte(o.Text)
		if o.File != "" {
			b, err := os.ReadFile(o.File) // resolved against the config file's directory
			if err != nil {
				return nil, err
			}
			body = append(body, b...)
		}
		if o.Extra != nil {
			b, err := os.ReadFile(o.Extra.File) // resolved too
			if err != nil {
				return nil, err
			}
			body = append(body, b...)
		}
		if o.Repeat > 1 {
			o.Logger.Warn("stamp: repeating the body", "times", o.Repeat)
			body = bytes.Repeat(body, o.Repeat)
		}
		return pipe.Source(func(c *pipe.Conn) pipe.Content {
			c.Header().Set("Content-Type", "text/plain")
			return func(w pipe.Writer) error { _, err := w.Write(body); return err }
		}), nil
	})
	components.Register(components.Registration{
		Name: "teapot", Kind: components.KindPipe, Scalar: "path", Stops: "418",
		Example: `teapot: /tea`,
	}, func(o teapotOptions, _ components.Context) (pipe.Component, error) {
		return pipe.Pipe(func(c *pipe.Conn) bool {
			if string(c.Request.Path) == o.Path {
				return c.Error(http.StatusTeapot, "short and stout")
			}
			return true
		}), nil
	})
}

// A program's own components go through config as the built-in ones do:
// named in a file, options decoded and checked with their positions,
// paths resolved against the file's directory, the server's logger
// given, shown by Explain and Graph, and served over a socket.
func TestRegisteredComponentEndToEnd(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stamp.txt"), []byte("from a file;"), 0o644); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(site, []byte(`
routes:
  - match: /
    pipeline:
      - teapot: /tea
      - stamp: {text: "hi;", file: stamp.txt, repeat: 2}
      - rot13
  - match: /short
    pipeline: [stamp: plain]
  - match: /nested
    pipeline: [stamp: {text: "n;", extra: {file: stamp.txt}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	loader := &config.Loader{Context: components.Context{Logger: slog.New(slog.NewTextHandler(&logged, nil))}}
	cfg, err := loader.Load(site)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()

	url := sluicetest.NewServer(t, cfg.Handler()).URL
	for _, tt := range []struct{ path, status, body string }{
		{"/", "200 OK", "uv;sebz n svyr;uv;sebz n svyr;"}, // "hi;from a file;" twice, through rot13
		{"/other", "200 OK", "uv;sebz n svyr;uv;sebz n svyr;"},
		{"/tea", "418 I'm a teapot", "418 I'm a teapot: short and stout\n"},
		{"/short", "200 OK", "plain"},
		{"/nested", "200 OK", "n;from a file;"},
	} {
		resp, err := http.Get(url + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Status != tt.status || string(b) != tt.body {
			t.Errorf("GET %s: %s %q, want %s %q", tt.path, resp.Status, b, tt.status, tt.body)
		}
	}

	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Stage != "stamp" || !strings.Contains(cfg.Warnings[0].Msg, "repeating the body times=2") {
		t.Errorf("warnings %v: want the one stamp logged while built", cfg.Warnings)
	}
	if !strings.Contains(logged.String(), "stamp: repeating the body") {
		t.Errorf("the loader's logger did not get stamp's warning: %q", logged.String())
	}

	var explain, graph strings.Builder
	cfg.Explain(&explain)
	cfg.Graph(&graph)
	for _, want := range []string{
		"1  teapot  pipe    path: /tea  (may answer 418 and stop)",
		`2  stamp   source  text: hi;, file: stamp.txt, repeat: 2`,
		"3  rot13   filter",
	} {
		if !strings.Contains(explain.String(), want) {
			t.Errorf("Explain lacks %q:\n%s", want, explain.String())
		}
	}
	for _, want := range []string{"teapot", "stamp", `label="418"`} {
		if !strings.Contains(graph.String(), want) {
			t.Errorf("Graph lacks %q:\n%s", want, graph.String())
		}
	}
}

// A file naming a registered component wrongly gets the errors a built-in
// one would, each at its position.
func TestRegisteredComponentErrors(t *testing.T) {
	_, err := new(config.Loader).Parse("site.yaml", []byte(`
routes:
  - match: /a
    pipeline:
      - stamp: {txt: hi}
  - match: /b
    pipeline:
      - stamp: {text: hi, repeat: many}
  - match: /c
    pipeline:
      - stamp: {}
  - match: /d
    pipeline:
      - stmap: hi
  - match: /e
    pipeline:
      - teapot: /tea
`))
	got := err.Error()
	for _, want := range []string{
		`site.yaml:5:17: unknown stamp option "txt" (did you mean "text"?)`,
		`site.yaml:8:35: stamp: repeat: want a whole number, got "many"`,
		`site.yaml:11:9: stamp: text or file is required`,
		`site.yaml:14:9: unknown component "stmap" (did you mean "stamp"?)`,
		`site.yaml:17:7: pipeline has no source: nothing produces the response (add one of: `,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "stamp") || strings.Count(got, "\n") != 4 {
		t.Errorf("want five errors, the sources listed with stamp:\n%s", got)
	}
}
