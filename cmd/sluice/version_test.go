package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "fd279d4912fbf65285123a12970123de6341086a"
	for _, c := range []struct {
		name string
		set  string
		bi   *debug.BuildInfo
		want string
	}{
		{"ldflags", "v1.2.3-4-gfd279d4", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.2"}}, "v1.2.3-4-gfd279d4"},
		{"ldflags without build info", "v1.2.3", nil, "v1.2.3"},
		{"go install of a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206122810-fd279d4912fb"}, Settings: vcs(rev, "false")}, "v0.0.0-20261206122810-fd279d4912fb"},
		{"checkout modified", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206122810-fd279d4912fb+dirty"}, Settings: vcs(rev, "true")}, "v0.0.0-20261206122810-fd279d4912fb+dirty"},
		{"devel with commit", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, "devel fd279d4912fb"},
		{"devel with commit modified", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "devel fd279d4912fb-dirty"},
		{"devel short commit", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc", "false")}, "devel abc"},
		{"devel", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"no version", "", &debug.BuildInfo{}, "devel"},
		{"no build info", "", nil, "unknown"},
	} {
		if got := versionFrom(c.set, c.bi); got != c.want {
			t.Errorf("%s: versionFrom(%q, …) = %q, want %q", c.name, c.set, got, c.want)
		}
	}
}
