package cgi

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A program does not outlive a server killed outright (SIGKILL: a worker
// its master gave up on, say), which has no chance to kill its group:
// the kernel kills the program it started.
func TestProgramDiesWithItsServer(t *testing.T) {
	dir := t.TempDir()
	script := cgiScript(t, dir, "run.cgi", "#!/bin/sh\n"+
		"echo $$ > "+dir+"/pid.tmp && mv "+dir+"/pid.tmp "+dir+"/pid\n"+
		"exec sleep 1000\n")
	addrFile := filepath.Join(dir, "addr")
	server := exec.Command(os.Args[0], "-test.run=^TestProgramServerProcess$")
	server.Env = append(os.Environ(), "SLUICE_CGI_TEST_SCRIPT="+script, "SLUICE_CGI_TEST_ADDR="+addrFile)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	var addr []byte
	sluicetest.WaitFor(t, "the server process's address", func() bool {
		addr, _ = os.ReadFile(addrFile)
		return len(addr) > 0
	})
	client := &http.Client{Timeout: time.Minute}
	go func() {
		if resp, err := client.Get("http://" + string(addr) + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	pid := cgiReadPids(t, filepath.Join(dir, "pid"), 1)[0]
	server.Process.Kill()
	server.Wait()
	cgiAllDead(t, "server killed", nil, []int{pid})
}

// TestProgramServerProcess is the server TestProgramDiesWithItsServer
// starts and kills: a gateway for the script it is given, serving until
// it is killed.
func TestProgramServerProcess(t *testing.T) {
	script, addrFile := os.Getenv("SLUICE_CGI_TEST_SCRIPT"), os.Getenv("SLUICE_CGI_TEST_ADDR")
	if script == "" {
		t.Skip("the server process of TestProgramDiesWithItsServer, started by it")
	}
	g, _ := newGateway(t, Options{Script: script, Timeout: time.Hour})
	srv := sluicetest.NewServer(t, pipe.Handler(g))
	if err := os.WriteFile(addrFile+".tmp", []byte(srv.Addr), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Rename(addrFile+".tmp", addrFile)
	select {} // until killed
}
