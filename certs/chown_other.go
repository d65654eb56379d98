//go:build !unix

package certs

import "os"

// chownFile gives the file name to uid and gid (os.Chown: on Windows
// an error).
func chownFile(name string, uid, gid int) error {
	return os.Chown(name, uid, gid)
}
