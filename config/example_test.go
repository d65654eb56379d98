package config_test

import (
	"fmt"
	"os"

	"github.com/sluice-server/sluice/config"
)

// Parse a config and describe the network it builds, as sluice check
// --explain does.
func ExampleLoader_Parse() {
	const site = `
listen: 127.0.0.1:8080
routes:
  - match: /hello
    pipeline:
      - text: "Hello, world!\n"
  - match: /secret/
    pipeline:
      - ipfilter: {allow: [127.0.0.1]}
      - text: {body: "s3cret\n", content_type: text/plain}
      - rot13
`
	cfg, err := new(config.Loader).Parse("site.yaml", []byte(site))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cfg.Close()
	cfg.Explain(os.Stdout)
	// Output:
	// listen         127.0.0.1:8080
	// workers        0
	// server_header  "sluice"
	// limits         defaults
	// log            info, text, to stderr
	//
	// route 1: /hello (exact)
	//   1  text  source  body: "Hello, world!\n"
	//
	// route 2: /secret/ (prefix)
	//   1  ipfilter  pipe    allow: [127.0.0.1]  (may answer 403 and stop)
	//   2  text      source  body: "s3cret\n", content_type: text/plain
	//   3  rot13     filter
}

// Every problem of a file is reported at once, each at its position.
func ExampleErrors() {
	const site = `
routes:
  - match: /
    pipeline:
      - compres: gzip
      - text: {bdy: hi}
`
	_, err := new(config.Loader).Parse("site.yaml", []byte(site))
	fmt.Println(err)
	// Output:
	// site.yaml:5:9: unknown component "compres" (did you mean "compress"?)
	// site.yaml:6:16: unknown text option "bdy" (did you mean "body"?)
}
