package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A descriptor that sluice's own parent left open without close-on-exec
// (a shell's, a process manager's) reached every CGI program, through the
// master and its workers. A program gets only 0–2 now. The script execs
// ls on its own descriptors, so ls lists what the program was started
// with: beside 0–2 only ls's own (the directory it reads), and the
// script if the shell kept it, may be open.
func TestCGIProgramsGetNoInheritedDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/fd is Linux's")
	}
	for _, workers := range []string{"0", "1"} {
		t.Run("workers="+workers, func(t *testing.T) {
			dir := t.TempDir()
			cgiScript(t, dir, "echo 'Content-Type: text/plain'\necho\n"+
				"exec ls -l /proc/$$/fd\n") // the shell's, as it execs ls: what the program got
			leakedPath := filepath.Join(dir, "leaked")
			leaked, err := os.Create(leakedPath)
			if err != nil {
				t.Fatal(err)
			}
			defer leaked.Close()
			file := filepath.Join(dir, "site.yaml")
			writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: "+workers+"\n"+
				"routes: [{match: /, pipeline: [{cgi: {script: run.cgi}}]}]\n")
			// Descriptors 3 to 12, all the leaked file: a worker's own
			// descriptors (3, 4, 5…) replace the low ones.
			cmd := exec.Command(binary, "serve", "-c", file)
			for range 10 {
				cmd.ExtraFiles = append(cmd.ExtraFiles, leaked)
			}
			s := startCmd(t, cmd)
			if workers != "0" {
				s.waitLog(t, "workers ready", 1)
			}
			_, _, body := get(t, "http://"+s.addr+"/")
			script := filepath.Join(dir, "run.cgi")
			var fds []string
			for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
				link, target, ok := strings.Cut(line, " -> ")
				if !ok {
					continue // ls's "total 0"
				}
				fd := link[strings.LastIndexByte(link, ' ')+1:]
				fds = append(fds, fd)
				switch {
				case fd == "0" || fd == "1" || fd == "2":
				case target == script || strings.HasPrefix(target, "/proc/"):
					// ls's directory; a shell that keeps its script open
					// past exec.
				default:
					t.Errorf("descriptor %s (%s) reached the CGI program", fd, target)
				}
			}
			if len(fds) < 3 || t.Failed() {
				t.Errorf("the program's descriptors:\n%s", body)
			}
		})
	}
}
