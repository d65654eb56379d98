package components_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// GreetOptions are the options of a component of the program's own. A
// config file sets them by their yaml keys, `greet: {name: world}`, or,
// since Scalar names it, sets name with `greet: world`.
type GreetOptions struct {
	Name        string `yaml:"name"`
	Punctuation string `yaml:"punctuation"`
}

// newGreet builds the component from the options the config file set.
func newGreet(o GreetOptions, _ components.Context) (pipe.Component, error) {
	if o.Name == "" {
		return nil, errors.New("greet: name is required")
	}
	body := "Hello, " + o.Name + o.Punctuation + "\n"
	return pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, body)
			return err
		}
	}), nil
}

// The program registers its component before it loads a config.
func init() {
	components.Register(components.Registration{
		Name:    "greet",
		Kind:    components.KindSource,
		Scalar:  "name",
		Example: `greet: {name: world, punctuation: "!"}`,
	}, newGreet)
}

// A program that embeds Sluice adds a component its config files can
// name, then serves a config that uses it.
func ExampleRegister() {
	cfg, err := new(config.Loader).Parse("site.yaml", []byte(`
routes:
  - match: /
    pipeline:
      - greet: {name: world, punctuation: "!"}
      - compress: gzip
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cfg.Close()
	srv, err := sluicetest.Start(cfg.Handler())
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", string(body))

	// Its options are checked as a built-in component's are.
	_, err = new(config.Loader).Parse("typo.yaml", []byte(`
routes:
  - match: /
    pipeline:
      - greet: {nmae: world}
`))
	fmt.Println(err)
	// Output:
	// 200 OK Hello, world!
	// typo.yaml:5:17: unknown greet option "nmae" (did you mean "name"?)
}
