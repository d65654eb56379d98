// Package demo holds the demo site that "sluice demo" serves, embedded in
// the binary: a config file, ConfigFile, and the folders its routes serve.
//
// The site is served from a data directory, not from the binary: Write
// puts the site's files there and Credentials the password of its private
// area, and the config file is then served like any other (sluice serve
// -c). Every page of the site shows the part of the config file that
// serves it; the package's tests check that what a page shows is what the
// file says (go test ./demo -run TestConfigShown -update rewrites them).
package demo

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

//go:generate go run opticks_gen.go

//go:embed all:site
var site embed.FS

// ConfigFile is the name of the site's config file, at the root of FS and
// of the data directory.
const ConfigFile = "sluice.yaml"

// User is the user name of the site's private area.
const User = "demo"

// The files of a data directory that are not the site's: Write leaves
// them alone.
const (
	// HtpasswdFile holds User's bcrypt hash, for the basic_auth pipe.
	HtpasswdFile = "users.htpasswd"
	// PasswordFile holds User's password itself (mode 0600), for
	// sluice demo to print at each start.
	PasswordFile = "users.password"
	// ManifestFile lists the files Write wrote, one slash path a line,
	// for the next Write to remove those the site no longer has.
	ManifestFile = ".demo-files"
)

// FS returns the demo site: ConfigFile at its root and the folders it
// names. The FS is read-only and safe for concurrent use; its files have
// no modification time.
func FS() fs.FS {
	sub, err := fs.Sub(site, "site")
	if err != nil {
		panic(err) // "site" is a valid, embedded name
	}
	return sub
}

// Write copies the site into the directory dir, creating it if needed,
// and returns the number of files it wrote. A file already there with the
// same content is left as it is (its modification time, and so the
// validators the server sends for it, unchanged); one whose content
// differs, from an older binary or edited by hand, is replaced. A file
// that an earlier Write put there (it is listed in ManifestFile) and the
// site no longer has is removed; other files of dir, such as a database
// or Credentials' files, are left alone.
func Write(dir string) (written int, err error) {
	fsys := FS()
	var names []string
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(path, 0o755)
		}
		names = append(names, name)
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return nil
		}
		// Replaced by a rename, so that a server reading the old file
		// never sees half of the new one.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		written++
		return nil
	})
	if err != nil {
		return written, err
	}
	manifest := filepath.Join(dir, ManifestFile)
	if old, err := os.ReadFile(manifest); err == nil {
		for _, name := range strings.Split(string(old), "\n") {
			if name != "" && fs.ValidPath(name) && !slices.Contains(names, name) {
				os.Remove(filepath.Join(dir, filepath.FromSlash(name)))
			}
		}
	}
	return written, os.WriteFile(manifest, []byte(strings.Join(names, "\n")+"\n"), 0o644)
}

// Credentials returns the password of User for the site in dir. The first
// call for a directory makes a random password and writes it to
// PasswordFile (mode 0600) and its bcrypt hash to HtpasswdFile; later
// calls return the same password, until either file is removed.
func Credentials(dir string) (password string, err error) {
	pwFile, htFile := filepath.Join(dir, PasswordFile), filepath.Join(dir, HtpasswdFile)
	if pw, err := os.ReadFile(pwFile); err == nil {
		password = strings.TrimSpace(string(pw))
		if ht, err := os.ReadFile(htFile); err == nil && matches(ht, password) {
			return password, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	password = rand.Text()[:16]
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(htFile, []byte(fmt.Sprintf("%s:%s\n", User, hash)), 0o644); err != nil {
		return "", err
	}
	return password, nil
}

// matches reports whether the htpasswd file ht holds User with password.
func matches(ht []byte, password string) bool {
	hash, ok := bytes.CutPrefix(bytes.TrimSpace(ht), []byte(User+":"))
	return ok && bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
}
