package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// FileFix returns what to do about err, an error opening, reading or
// writing a file that a config (or a command line) names, for the
// operator: "" when it has nothing to add to err's own text. It knows a
// path that does not exist, a directory where a file belongs, a file
// where a directory belongs, and permissions that shut out the user this
// process runs as, which it names. It is safe for concurrent use.
func FileFix(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EISDIR):
		return "name a file, not a directory (one in it, say)"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of the path is a file, not a directory: correct the path"
	case errors.Is(err, fs.ErrNotExist):
		return "correct the path, or create the file"
	case errors.Is(err, fs.ErrPermission):
		return "this process runs as " + processUser() + ", which the permissions of the file or of a directory above it shut out: " +
			"give that user access (its group, say: chgrp and chmod g+r, or g+rw to write), or run the server as a user that has it"
	}
	return ""
}

// withFix returns err's text, an error with a file a config names,
// followed by FileFix's advice, if any.
func withFix(err error) string {
	fix := FileFix(err)
	if errors.Is(err, fs.ErrNotExist) {
		fix += " (a relative path starts at the config file's directory)"
	}
	if fix != "" {
		return err.Error() + ": " + fix
	}
	return err.Error()
}

// processUser names the effective user of this process: "user NAME (uid
// N)", or "uid N" for a user the system does not name.
func processUser() string {
	uid := os.Geteuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("user %s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}
