package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// debRoot is the script TestDebianPackage runs in a mount and network
// namespace of its own (unshare): it makes a throwaway root, an overlay
// of / whose changes go to a tmpfs in $1, so that dpkg installs into a
// copy of this machine that vanishes with the namespace; then it runs
// debSteps inside it (chroot) with the package at /tmp/sluice.deb.
const debRoot = `set -eu
d=$1 deb=$2
mount -t tmpfs sluice-deb-test "$d"
mkdir "$d/upper" "$d/work" "$d/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$d/upper,workdir=$d/work" "$d/root"
r=$d/root
for m in proc sys dev; do mount --rbind "/$m" "$r/$m"; done
# An empty /run: no systemd runs there, so the maintainer scripts start
# nothing (as in a chroot of a system being built).
mount -t tmpfs tmpfs "$r/run"
mount -t tmpfs tmpfs "$r/tmp"
cp "$deb" "$r/tmp/sluice.deb"
cp "$3" "$r/tmp/steps.sh"
touch "$r/.sluice-throwaway-root"
exec chroot "$r" /bin/bash /tmp/steps.sh
`

// debSteps are the steps of TestDebianPackage in the throwaway root:
// each prints "@@@ NAME", its output, and "@@@ rc STATUS".
const debSteps = `[ -e /.sluice-throwaway-root ] || { echo "not in the throwaway root"; exit 1; }
# A clean root: no sluice package, user or group, and no /var/www (a web
# server of this machine's would have put an index.html there).
if dpkg -s sluice >/dev/null 2>&1; then dpkg -P sluice >/dev/null; fi
sed -i '/^sluice:/d' /etc/passwd /etc/shadow /etc/group /etc/gshadow
rm -rf /var/www

step() { local name=$1; shift; echo "@@@ $name"; "$@" 2>&1; echo "@@@ rc $?"; }
files=(/usr/bin/sluice /etc/sluice /etc/sluice/sluice.yaml /usr/lib/systemd/system/sluice.service
	/usr/lib/systemd/system/sluice.socket /usr/share/sluice/index.sluice-debian.html
	/usr/share/doc/sluice/README.md /var/log/sluice /var/lib/sluice /var/www/html/index.sluice-debian.html)
links=(/etc/systemd/system/multi-user.target.wants/sluice.service /etc/systemd/system/sluice.service)
stat_all() { for f in "$@"; do stat -c '%n %a %U %G %F' "$f" 2>/dev/null || echo "$f missing"; done; }

step before-user getent passwd sluice
step before-package dpkg -s sluice
step install dpkg -i /tmp/sluice.deb
step files stat_all "${files[@]}"
step links stat_all "${links[@]}"
step passwd getent passwd sluice
step group getent group sluice
step conffiles dpkg-query -W -f '${Conffiles}\n' sluice
step verify-files dpkg --verify sluice
step unit grep -h '^Exec' /usr/lib/systemd/system/sluice.service
if command -v systemd-analyze >/dev/null; then
	step analyze systemd-analyze verify /usr/lib/systemd/system/sluice.service /usr/lib/systemd/system/sluice.socket
fi
step check sluice check -c /etc/sluice/sluice.yaml
step version sluice version

# The installed config served as the unit serves it, started as root:
# port 80 in this namespace's own network, the sluice user after that.
serve() {
	ip link set lo up || return
	sluice serve -c /etc/sluice/sluice.yaml 2>/tmp/serve.log &
	local pid=$! i
	for i in $(seq 200); do
		if exec 3<>/dev/tcp/127.0.0.1/80; then break; fi 2>/dev/null
		kill -0 "$pid" 2>/dev/null || { cat /tmp/serve.log; return 1; }
		sleep 0.05
	done
	printf 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
	cat <&3
	exec 3<&-
	echo "@@ uid $(awk '/^Uid:/ {print $2}' /proc/$pid/status)"
	kill -TERM "$pid"
	wait "$pid"
	echo "@@ exit $?"
	echo "@@ access log"
	stat -c '%n %U' /var/log/sluice/access.log
	cat /var/log/sluice/access.log
}
step serve serve

step remove dpkg -r sluice
step removed-files stat_all "${files[@]}"
step removed-links stat_all "${links[@]}"
step purge dpkg -P sluice
step purged-files stat_all "${files[@]}"
step purged-links stat_all "${links[@]}"
step purged-package dpkg -s sluice
step purged-user getent passwd sluice
`

// debStep is what a step printed and its exit status.
type debStep struct {
	out string
	rc  int
}

// parseDebSteps splits the output of debSteps into its steps.
func parseDebSteps(t *testing.T, out string) map[string]debStep {
	t.Helper()
	steps := map[string]debStep{}
	re := regexp.MustCompile(`(?ms)^@@@ (\S+)\n(.*?)^@@@ rc (\d+)\n`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		rc, _ := strconv.Atoi(m[3])
		steps[m[1]] = debStep{m[2], rc}
	}
	return steps
}

// The .deb packaging/deb/build makes, installed by dpkg in a throwaway
// copy of this machine's root, puts its files where they belong with
// their modes and owners, makes the sluice user, passes systemd-analyze
// verify and sluice check, serves the welcome page on port 80 as the
// sluice user, and is removed (the config stays) then purged (nothing of
// it stays but the user, as Debian keeps system users).
func TestDebianPackage(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("installing the .deb in a throwaway root needs root (mounts, dpkg, chown); CI runs as root")
		}
		t.Skip("installing the .deb in a throwaway root needs root (mounts, dpkg, chown): run the tests as root")
	}
	for _, tool := range [][2]string{{"unshare", "util-linux"}, {"dpkg-deb", "dpkg"}, {"adduser", "adduser"}, {"ip", "iproute2"}} {
		sluicetest.NeedTool(t, tool[0], tool[1])
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil && os.Getenv("CI") != "" {
		t.Fatal("systemd-analyze (systemd) is not installed; CI must have it")
	}

	bin, version := stampedBinary(t)
	arch, err := exec.Command("dpkg", "--print-architecture").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command(filepath.Join(repoRoot(t), "packaging", "deb", "build"), bin, strings.TrimSpace(string(arch)), version, dir)
	build.Env = append(os.Environ(), "DEB_COMPRESSION=gzip") // xz takes seconds more
	out, err := build.Output()
	if err != nil {
		t.Fatalf("packaging/deb/build: %v\n%s", err, stderrOf(err))
	}
	deb := strings.TrimSpace(string(out))
	steps := filepath.Join(dir, "steps.sh")
	if err := os.WriteFile(steps, []byte(debSteps), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "--", "bash", "-c", debRoot, "bash", mnt, deb, steps)
	outb, err := cmd.CombinedOutput()
	t.Logf("in the throwaway root:\n%s", outb)
	got := parseDebSteps(t, string(outb))
	if _, ok := got["install"]; !ok {
		msg := "the throwaway root could not be made: " + strings.TrimSpace(string(outb))
		if err != nil {
			msg += " (" + err.Error() + ")"
		}
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err != nil {
		t.Errorf("the steps ended with %v", err)
	}

	step := func(name string, wantRC int) string {
		t.Helper()
		s, ok := got[name]
		if !ok {
			t.Errorf("step %s did not run", name)
		} else if (wantRC == 0) != (s.rc == 0) {
			t.Errorf("step %s: exit status %d, want %s\n%s", name, s.rc, map[bool]string{true: "0", false: "non-zero"}[wantRC == 0], s.out)
		}
		return s.out
	}
	step("before-user", 2)
	step("before-package", 1)
	step("install", 0)

	wantFiles := func(stepName, want string) {
		t.Helper()
		if out := step(stepName, 0); strings.TrimSpace(out) != strings.TrimSpace(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", stepName, out, want)
		}
	}
	wantFiles("files", `
/usr/bin/sluice 755 root root regular file
/etc/sluice 755 root root directory
/etc/sluice/sluice.yaml 644 root root regular file
/usr/lib/systemd/system/sluice.service 644 root root regular file
/usr/lib/systemd/system/sluice.socket 644 root root regular file
/usr/share/sluice/index.sluice-debian.html 644 root root regular file
/usr/share/doc/sluice/README.md 644 root root regular file
/var/log/sluice 750 sluice adm directory
/var/lib/sluice 750 sluice sluice directory
/var/www/html/index.sluice-debian.html 644 root root regular file`)
	wantFiles("links", `
/etc/systemd/system/multi-user.target.wants/sluice.service 777 root root symbolic link
/etc/systemd/system/sluice.service missing`)

	passwd := strings.Split(strings.TrimSpace(step("passwd", 0)), ":")
	if len(passwd) != 7 {
		t.Errorf("getent passwd sluice = %q", passwd)
	} else {
		uid, _ := strconv.Atoi(passwd[2])
		if uid == 0 || uid >= 1000 || passwd[5] != "/var/lib/sluice" || passwd[6] != "/usr/sbin/nologin" {
			t.Errorf("user sluice = %q, want a system user (uid below 1000) with home /var/lib/sluice and shell /usr/sbin/nologin", passwd)
		}
		if group := strings.Split(strings.TrimSpace(step("group", 0)), ":"); len(group) < 3 || group[2] != passwd[3] {
			t.Errorf("group sluice = %q, want the user's group (gid %s)", group, passwd[3])
		}
	}
	if out := step("conffiles", 0); !regexp.MustCompile(`(?m)^ /etc/sluice/sluice.yaml [0-9a-f]{32}$`).MatchString(out) {
		t.Errorf("conffiles = %q, want /etc/sluice/sluice.yaml", out)
	}
	if out := step("verify-files", 0); strings.TrimSpace(out) != "" {
		t.Errorf("dpkg --verify sluice:\n%s", out)
	}
	if out := step("unit", 0); !strings.Contains(out, "ExecStart=/usr/bin/sluice serve -c /etc/sluice/sluice.yaml") || strings.Contains(out, "/usr/local/") {
		t.Errorf("the unit's commands:\n%s\nwant /usr/bin/sluice", out)
	}
	if _, ok := got["analyze"]; ok {
		if out := step("analyze", 0); strings.TrimSpace(out) != "" {
			t.Errorf("systemd-analyze verify:\n%s", out)
		}
	}
	step("check", 0)
	if out := step("version", 0); !strings.HasPrefix(out, "sluice "+version+" ") {
		t.Errorf("sluice version = %q, want version %s", out, version)
	}

	serve := step("serve", 0)
	for _, want := range []string{"HTTP/1.1 200 OK\r\n", "\r\nServer: sluice\r\n", "<h1>Welcome to Sluice</h1>", "\n@@ exit 0\n", "/var/log/sluice/access.log sluice\n", `"GET / HTTP/1.1" 200 `} {
		if !strings.Contains(serve, want) {
			t.Errorf("serving the installed config: no %q in\n%s", want, serve)
		}
	}
	if m := regexp.MustCompile(`@@ uid (\d+)`).FindStringSubmatch(serve); m == nil || len(passwd) != 7 || m[1] != passwd[2] {
		t.Errorf("the server's uid (%q) is not sluice's (%q)", m, passwd)
	}

	step("remove", 0)
	wantFiles("removed-files", `
/usr/bin/sluice missing
/etc/sluice 755 root root directory
/etc/sluice/sluice.yaml 644 root root regular file
/usr/lib/systemd/system/sluice.service missing
/usr/lib/systemd/system/sluice.socket missing
/usr/share/sluice/index.sluice-debian.html missing
/usr/share/doc/sluice/README.md missing
/var/log/sluice 750 sluice adm directory
/var/lib/sluice 750 sluice sluice directory
/var/www/html/index.sluice-debian.html 644 root root regular file`)
	step("purge", 0)
	wantFiles("purged-files", `
/usr/bin/sluice missing
/etc/sluice missing
/etc/sluice/sluice.yaml missing
/usr/lib/systemd/system/sluice.service missing
/usr/lib/systemd/system/sluice.socket missing
/usr/share/sluice/index.sluice-debian.html missing
/usr/share/doc/sluice/README.md missing
/var/log/sluice missing
/var/lib/sluice missing
/var/www/html/index.sluice-debian.html missing`)
	wantFiles("purged-links", `
/etc/systemd/system/multi-user.target.wants/sluice.service missing
/etc/systemd/system/sluice.service missing`)
	step("purged-package", 1)
	step("purged-user", 0)
}

// packaging/deb/build turns git describe's versions into Debian versions
// that sort as they do, and refuses what it cannot turn.
func TestDebianVersion(t *testing.T) {
	script := filepath.Join(repoRoot(t), "packaging", "deb", "build")
	debVersion := func(v string) (string, error) {
		cmd := exec.Command(script, "--version", v)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1765000000", "DEB_VERSION=")
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	// In the order they sort (but -dirty, which is marked, not ordered).
	ordered := []struct{ version, deb string }{
		{"0123abc", "0.0.0~git20251206054640.0123abc"},
		{"fd279d4", "0.0.0~git20251206054640.fd279d4"},
		{"v0.9.0", "0.9.0"},
		{"v1.0.0-rc1", "1.0.0~rc1"},
		{"v1.0.0-rc.2-3-g0a1b2c3", "1.0.0~rc.2+3.g0a1b2c3"},
		{"v1.0.0", "1.0.0"},
		{"v1.0.0-4-gabcdef0", "1.0.0+4.gabcdef0"},
		{"v1.0.0-4-gabcdef0-dirty", "1.0.0+4.gabcdef0.dirty"},
		{"v1.0.0-12-g0000000", "1.0.0+12.g0000000"},
		{"v1.0.1", "1.0.1"},
		{"v1.10.0", "1.10.0"},
	}
	for _, c := range []struct{ version, deb string }{
		{"fd279d4-dirty", "0.0.0~git20251206054640.fd279d4+dirty"},
		{"v1.0.0-dirty", "1.0.0+dirty"},
	} {
		if got, err := debVersion(c.version); err != nil || got != c.deb {
			t.Errorf("--version %s = %q, %v; want %q", c.version, got, err, c.deb)
		}
	}
	for i, c := range ordered {
		got, err := debVersion(c.version)
		if err != nil || got != c.deb {
			t.Errorf("--version %s = %q, %v; want %q", c.version, got, err, c.deb)
		}
		if i > 0 && sluicetest.HaveTool(t, "dpkg", "dpkg") != "" {
			prev := ordered[i-1].deb
			if err := exec.Command("dpkg", "--compare-versions", prev, "lt", c.deb).Run(); err != nil {
				t.Errorf("dpkg --compare-versions %s lt %s: %v", prev, c.deb, err)
			}
		}
	}
	for _, v := range []string{"", "main", "v1", "release-1.0", "v1.0.0-beta", "1.0.0 rc1", "abc"} {
		if got, err := debVersion(v); err == nil {
			t.Errorf("--version %q = %q, want an error", v, got)
		}
	}
}

// stderrOf is the standard error an exec.ExitError kept, if any.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
