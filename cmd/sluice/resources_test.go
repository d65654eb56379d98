package main_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Each of N workers sets GOMAXPROCS to the CPUs divided by N (at least 1)
// unless the environment sets it, and divides its file caches by N.
func TestWorkersSizedForN(t *testing.T) {
	needWorkers(t)
	for _, tt := range []struct {
		env  string
		want int
	}{
		{"", max(1, runtime.GOMAXPROCS(0)/2)}, // the runtime's default: the CPUs this process may use
		{"GOMAXPROCS=3", 3},
	} {
		t.Run(tt.env, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "w.yaml")
			writeConfig(t, file, workersConfig(2, "hi"))
			cmd := exec.Command(binary, "serve", "-c", file)
			cmd.Env = slices.DeleteFunc(cmd.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			s := startCmd(t, cmd)
			s.waitLog(t, fmt.Sprintf(`msg="sized for the workers" workers=2 gomaxprocs=%d file_caches="1/2 of the defaults"`, tt.want), 2)
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d", code)
			}
		})
	}
}
