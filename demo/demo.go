// Package demo holds the demo site that "sluice demo" serves, embedded in
// the binary.
package demo

import (
	"embed"
	"io/fs"
)

//go:embed site
var site embed.FS

// FS returns the demo site: index.html at its root, with style.css,
// hello.txt and about/index.html. The FS is read-only and safe for
// concurrent use; its files have no modification time.
func FS() fs.FS {
	sub, err := fs.Sub(site, "site")
	if err != nil {
		panic(err) // "site" is a valid, embedded name
	}
	return sub
}
