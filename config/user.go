package config

import (
	"fmt"
	"os/user"
	"strconv"
)

// LookupUser finds the user a config's user key names: a user name, or a
// numeric user id.
func LookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil && isNumber(name) {
		u, err = user.LookupId(name)
	}
	if err != nil {
		switch err.(type) {
		case user.UnknownUserError, user.UnknownUserIdError:
			return nil, fmt.Errorf("no user %q on this system: name one it has (getent passwd lists them), "+
				"or create it (useradd --system --user-group --no-create-home --shell /usr/sbin/nologin %s)", name, name)
		}
		return nil, err
	}
	return u, nil
}

// LookupGroup finds the group a config's group key names: a group name,
// or a numeric group id.
func LookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil && isNumber(name) {
		g, err = user.LookupGroupId(name)
	}
	if err != nil {
		switch err.(type) {
		case user.UnknownGroupError, user.UnknownGroupIdError:
			return nil, fmt.Errorf("no group %q on this system: name one it has (getent group lists them), leave group out for the user's own, "+
				"or create it (groupadd --system %s)", name, name)
		}
		return nil, err
	}
	return g, nil
}

func checkUser(name string) error {
	if name == "" {
		return fmt.Errorf("want a user name, got an empty string")
	}
	_, err := LookupUser(name)
	return err
}

func checkGroup(name string) error {
	if name == "" {
		return fmt.Errorf("want a group name, got an empty string")
	}
	_, err := LookupGroup(name)
	return err
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
