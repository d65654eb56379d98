package peers

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a running peer. Its methods are not safe for concurrent use.
type Server struct {
	Peer   Peer
	Env    Env
	Config string   // the configuration written, "" if none
	Argv   []string // the command run (under taskset)
	CPUs   string   // the CPU list it runs on (taskset -c)
	Pid    int      // the server's process (taskset execs it)

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
}

// Start writes p's configuration into env.Dir, starts p under
// "taskset -c cpus", and waits (at most 15 s) until GET / (the peer's
// probe path, if it names one) answers 200,
// then, for a peer with workers (Env.Workers), until every worker is up
// (at most 60 s more). The server runs in a process group of its own, so
// Stop can end its children too.
func Start(p Peer, env Env, cpus string) (*Server, error) {
	if err := os.MkdirAll(env.Dir, 0o755); err != nil {
		return nil, err
	}
	// Servers that drop privileges (Apache, h2o) must reach their files.
	os.Chmod(env.Dir, 0o755)
	s := &Server{Peer: p, Env: env, CPUs: cpus, done: make(chan struct{})}
	conf := ""
	text, err := p.Config(env)
	if err != nil {
		return nil, err
	}
	if text != "" {
		s.Config = text
		conf = filepath.Join(env.Dir, p.conf)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	s.Argv = p.CommandLine(env, conf)
	args := append([]string{"-c", cpus}, s.Argv...)
	s.cmd = exec.Command("taskset", args...)
	s.cmd.Dir = env.Dir
	// The harness runs as root and sluice's configs here name no user:
	// sluice serves as root on purpose, as the peers' masters do.
	s.cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1")
	if p.environ != nil {
		s.cmd.Env = append(s.cmd.Env, p.environ(env)...)
	}
	out, err := os.Create(filepath.Join(env.Dir, "output.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.Pid = s.cmd.Process.Pid
	go func() { s.cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(15 * time.Second)
	for {
		err := probe(env.Addr(), p.probePath(), p.tls)
		if err == nil {
			if err := s.waitReady(60 * time.Second); err != nil {
				return nil, err
			}
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited at start: %s", p.Name, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s did not answer GET %s within 15 s (%v): %s", p.Name, p.probePath(), err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probe makes one GET path on a new connection, over TLS (not verifying
// the certificate) if secure, and wants 200.
func probe(addr, path string, secure bool) error {
	var c net.Conn
	var err error
	if secure {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}}
		c, err = d.Dial("tcp", addr)
	} else {
		c, err = net.DialTimeout("tcp", addr, time.Second)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "HTTP/1.1 200") && !strings.HasPrefix(line, "HTTP/1.0 200") {
		return fmt.Errorf("GET %s answered %q", path, strings.TrimSpace(line))
	}
	return nil
}

// waitReady waits until the peer's ready hook holds, at most limit; it
// stops the server if it does not.
func (s *Server) waitReady(limit time.Duration) error {
	if s.Peer.ready == nil {
		return nil
	}
	deadline := time.Now().Add(limit)
	for !s.Peer.ready(s) {
		if !s.Alive() {
			return fmt.Errorf("%s exited while starting: %s", s.Peer.Name, s.logTail())
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("%s answered GET / but did not finish starting within %s: %s", s.Peer.Name, limit, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// readLog returns the server's log file name in its directory, "" if
// unreadable.
func (s *Server) readLog(name string) string {
	data, _ := os.ReadFile(filepath.Join(s.Env.Dir, name))
	return string(data)
}

// logTail returns the end of the server's output and error logs.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"output.log", "error.log"} {
		data, err := os.ReadFile(filepath.Join(s.Env.Dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 800 {
			data = data[len(data)-800:]
		}
		fmt.Fprintf(&b, "[%s] %s ", name, strings.TrimSpace(string(data)))
	}
	return b.String()
}

// Alive reports whether the server process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the server's process group, and SIGKILL if it has
// not exited within 5 s, then waits until it has.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil {
		return
	}
	syscall.Kill(-s.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-s.Pid, syscall.SIGKILL)
		<-s.done
	}
	// Children that outlived the leader (an Apache child finishing) go too.
	syscall.Kill(-s.Pid, syscall.SIGKILL)
}

// Usage is the resources of a server's process tree at one moment.
type Usage struct {
	CPU   time.Duration // user+system time of every process, and of reaped children
	RSS   int64         // resident set, summed over the processes, in bytes
	Procs int           // processes in the tree
}

// clockTick is the unit of times in /proc/PID/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// Usage reads the resources of the server and its descendants from /proc.
func (s *Server) Usage() (Usage, error) { return TreeUsage(s.Pid) }

// TreeUsage reads the resources of process pid and its descendants from
// /proc: a daemon the harness started that is not a Server (the php
// scenario's php-fpm).
func TreeUsage(pid int) (Usage, error) {
	var u Usage
	pids, err := tree(pid)
	if err != nil {
		return u, err
	}
	for _, pid := range pids {
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		u.CPU += time.Duration(st.utime+st.stime+st.cutime+st.cstime) * clockTick
		u.RSS += readRSS(pid)
		u.Procs++
	}
	if u.Procs == 0 {
		return u, errors.New("server process is gone")
	}
	return u, nil
}

type stat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	return parseStat(data)
}

// parseStat parses the contents of a /proc/PID/stat.
func parseStat(data []byte) (stat, error) {
	var st stat
	// "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return st, errors.New("/proc/PID/stat: no )")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return st, fmt.Errorf("/proc/PID/stat: %d fields after comm, want 15 or more", len(f))
	}
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	for j, dst := range []*int64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		v, err := strconv.ParseInt(f[11+j], 10, 64)
		if err != nil {
			return st, fmt.Errorf("/proc/PID/stat: field %d: %v", 14+j, err)
		}
		*dst = v
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return st, fmt.Errorf("/proc/PID/stat: ppid: %v", err)
	}
	st.ppid = ppid
	return st, nil
}

// readRSS returns VmRSS of pid in bytes, 0 if unreadable.
func readRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// ProcessMemory is one process's resident memory, from
// /proc/PID/smaps_rollup.
type ProcessMemory struct {
	Pid int
	RSS int64 // resident set, in bytes
	PSS int64 // proportional set: each resident page divided by the processes sharing it, in bytes
}

// Memory returns the memory of the server process and of each of its
// descendants (a master's workers), the server first. The PSS of every
// process of a tree adds up to the memory the tree holds; RSS counts
// shared pages (the binary, pages inherited at fork) once per process.
func (s *Server) Memory() ([]ProcessMemory, error) { return treeMemory(s.Pid) }

func treeMemory(root int) ([]ProcessMemory, error) {
	pids, err := tree(root)
	if err != nil {
		return nil, err
	}
	var out []ProcessMemory
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err == nil {
			var m ProcessMemory
			if m.RSS, m.PSS, err = parseSmapsRollup(data); err == nil {
				m.Pid = pid
				out = append(out, m)
				continue
			}
		}
		if pid == root {
			return nil, err
		}
		// A descendant that exited meanwhile.
	}
	return out, nil
}

// parseSmapsRollup returns the Rss and Pss lines of a
// /proc/PID/smaps_rollup, in bytes.
func parseSmapsRollup(data []byte) (rss, pss int64, err error) {
	var haveRSS, havePSS bool
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps_rollup: %q: %v", line, err)
		}
		switch f[0] {
		case "Rss:":
			rss, haveRSS = kb<<10, true
		case "Pss:":
			pss, havePSS = kb<<10, true
		}
	}
	if !haveRSS || !havePSS {
		return 0, 0, errors.New("smaps_rollup: no Rss or Pss line")
	}
	return rss, pss, nil
}

// tree returns root and all its descendants.
func tree(root int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid <= 0 {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}

// TreeRuntime returns the time every thread of process pid and of its
// descendants has run on a CPU, from /proc/PID/task/TID/schedstat: the
// nanosecond count the kernel keeps, of which utime+stime (in 10 ms
// ticks) are a rounding. It leaves out threads that have exited, so it is
// for processes whose threads last (nginx's, php-fpm's static children,
// a Go runtime's), measured over a run too short for ticks: one that
// spends a few hundred milliseconds of CPU in all.
func TreeRuntime(pid int) (time.Duration, error) { return ProcsRuntime(pid, "") }

// ProcsRuntime is TreeRuntime over the processes of pid's tree whose
// command line (/proc/PID/cmdline, arguments joined by spaces) holds
// match: "worker process" for nginx's workers alone, without its master
// and cache manager; "" for every process.
func ProcsRuntime(pid int, match string) (time.Duration, error) {
	pids, err := tree(pid)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	found := false
	for _, p := range pids {
		if match != "" {
			cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if err != nil || !strings.Contains(strings.ReplaceAll(string(cmd), "\x00", " "), match) {
				continue
			}
		}
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if err != nil {
			continue // exited meanwhile
		}
		for _, t := range tasks {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", p, t.Name()))
			if err != nil {
				continue
			}
			ns, err := parseSchedstat(data)
			if err != nil {
				return 0, err
			}
			sum += ns
			found = true
		}
	}
	if !found {
		return 0, errors.New("no thread of the process tree could be read")
	}
	return sum, nil
}

// parseSchedstat returns the first field of a schedstat line: the
// thread's time on a CPU, in nanoseconds.
func parseSchedstat(data []byte) (time.Duration, error) {
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return 0, fmt.Errorf("schedstat: %q: want three fields", data)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat: %q: not a count of nanoseconds", data)
	}
	return time.Duration(ns), nil
}

// ProcTicks returns the CPU time of process pid in clock ticks, from
// /proc/PID/stat: utime+stime, and with reaped set cutime+cstime too
// (its children that exited and were waited for). For the load commands
// of bench/cmd that read a server's CPU themselves.
func ProcTicks(pid int, reaped bool) (uint64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	n := st.utime + st.stime
	if reaped {
		n += st.cutime + st.cstime
	}
	return uint64(n), nil
}
