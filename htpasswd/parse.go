package htpasswd

import (
	"fmt"
	"strings"
)

// parsedUser is one user of an htpasswd file.
type parsedUser struct {
	hash  string // "" for a locked user
	class string // hashClass(hash); "" for a locked user
}

// parse parses an htpasswd file; name is used in problems. It
// returns every user, locked ones with an empty hash, and describes each
// line that locks a user or names none in problems, as
// `users:3: user "bob": unsupported hash format`: the user name quoted
// with Go escapes, never the hash.
func parse(data []byte, name string) (users map[string]parsedUser, problems []string) {
	users = make(map[string]parsedUser)
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimLeft(line, " \t"), "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			problems = append(problems, fmt.Sprintf("%s:%d: want user:hash", name, n+1))
			continue
		}
		if _, dup := users[user]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: user %q listed twice: locked", name, n+1, user))
			users[user] = parsedUser{}
			continue
		}
		hash = strings.TrimSpace(hash)
		if err := checkHash(hash); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: user %q: %v: locked", name, n+1, user, err))
			users[user] = parsedUser{}
			continue
		}
		users[user] = parsedUser{hash: hash, class: hashClass(hash)}
	}
	return users, problems
}
