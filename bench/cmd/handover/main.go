//go:build linux

// Command handover measures the alternative to draining that workers.md
// weighs: handing a plain-TCP tunnel's two sockets from an old process
// to a new one over a Unix socket (SCM_RIGHTS), so that the old process
// can exit at once, against keeping the tunnels in the old process
// until they end (what Sluice's workers do on a reload).
//
// It starts a TCP echo upstream, then a relay process (this binary,
// -role relay) that accepts client connections and copies bytes both
// ways to the upstream, two goroutines and two 32 KiB buffers a tunnel,
// as Sluice's proxy tunnels do. It opens the tunnels, reads the relay's
// resident memory (what a draining process holds), then starts a second
// relay and asks the first to hand every tunnel over: the first stops
// its copies (a read deadline in the past; what a copy read is written
// before it returns), sends each tunnel's two descriptors in one
// SCM_RIGHTS message, and exits; the second resumes the copies. Clients
// keep writing numbered lines throughout, and each checks that every
// line comes back, in order, after the handover.
//
//	go -C bench run ./cmd/handover --tunnels 1000
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	role := flag.String("role", "measure", "measure, or (for the child processes) relay")
	tunnels := flag.Int("tunnels", 1000, "tunnels to open and hand over")
	listen := flag.String("listen", "", "relay: the address to accept tunnels on")
	upstream := flag.String("upstream", "", "relay: the echo upstream's address")
	handoff := flag.String("handoff", "", "relay: the Unix socket to hand tunnels over on (SIGUSR1) or, with -receive, to take them from")
	receive := flag.Bool("receive", false, "relay: take tunnels from -handoff instead of accepting")
	flag.Parse()
	var err error
	switch *role {
	case "relay":
		err = relay(*listen, *upstream, *handoff, *receive)
	case "measure":
		err = measure(*tunnels)
	default:
		err = fmt.Errorf("-role %q: want measure or relay", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "handover:", err)
		os.Exit(1)
	}
}

// tunnel is a relayed pair: the client's connection and the upstream's.
type tunnel struct {
	client, up *net.TCPConn
	done       sync.WaitGroup
}

// run copies both ways until either side ends or a deadline stops it.
func (t *tunnel) run() {
	t.done.Add(2)
	cp := func(dst, src *net.TCPConn) {
		defer t.done.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go cp(t.up, t.client)
	go cp(t.client, t.up)
}

// stop ends the copies without closing anything: every byte a copy read
// has been written when it returns.
func (t *tunnel) stop() {
	past := time.Unix(1, 0)
	t.client.SetReadDeadline(past)
	t.up.SetReadDeadline(past)
	t.done.Wait()
	t.client.SetReadDeadline(time.Time{})
	t.up.SetReadDeadline(time.Time{})
}

// relay is the child process: it accepts tunnels and relays them, and on
// SIGUSR1 hands them over on the handoff socket and exits; with receive
// it takes tunnels from that socket instead and relays them until killed.
func relay(listen, upstream, handoff string, receive bool) error {
	if receive {
		return takeOver(handoff)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var all []*tunnel
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			t := &tunnel{client: c.(*net.TCPConn), up: u.(*net.TCPConn)}
			t.run()
			mu.Lock()
			all = append(all, t)
			mu.Unlock()
		}
	}()
	fmt.Println("ready")
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	<-usr1
	ln.Close()
	uc, err := net.Dial("unix", handoff)
	if err != nil {
		return err
	}
	defer uc.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, t := range all {
		t.stop()
		cf, err := t.client.File()
		if err != nil {
			return err
		}
		uf, err := t.up.File()
		if err != nil {
			return err
		}
		rights := syscall.UnixRights(int(cf.Fd()), int(uf.Fd()))
		if _, _, err := uc.(*net.UnixConn).WriteMsgUnix([]byte{1}, rights, nil); err != nil {
			return err
		}
		cf.Close()
		uf.Close()
		t.client.Close()
		t.up.Close()
	}
	return nil
}

// takeOver accepts the old relay on handoff and relays every tunnel it
// sends, until killed.
func takeOver(handoff string) error {
	ln, err := net.Listen("unix", handoff)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	uc := c.(*net.UnixConn)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	n := 0
	for {
		_, oobn, _, _, err := uc.ReadMsgUnix(make([]byte, 1), oob)
		if err != nil {
			break // the old relay exited: every tunnel is here
		}
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return fmt.Errorf("a handover message without rights: %v", err)
		}
		fds, err := syscall.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 2 {
			return fmt.Errorf("a handover message with %d descriptors: %v", len(fds), err)
		}
		conns := make([]*net.TCPConn, 2)
		for i, fd := range fds {
			f := os.NewFile(uintptr(fd), "tunnel")
			nc, err := net.FileConn(f)
			f.Close()
			if err != nil {
				return err
			}
			conns[i] = nc.(*net.TCPConn)
		}
		(&tunnel{client: conns[0], up: conns[1]}).run()
		n++
	}
	fmt.Println("took", n)
	select {}
}

// child is a relay process started by measure.
type child struct {
	cmd   *exec.Cmd
	lines *bufio.Reader
}

func startChild(args ...string) (*child, error) {
	cmd := exec.Command("/proc/self/exe", append([]string{"-role", "relay"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, lines: bufio.NewReader(out)}
	if line, err := c.lines.ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		return nil, fmt.Errorf("relay did not start: %q %v", line, err)
	}
	return c, nil
}

func measure(n int) error {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := probe.Addr().String()
	probe.Close()
	sock := filepath.Join(os.TempDir(), fmt.Sprintf("handover-%d.sock", os.Getpid()))
	os.Remove(sock)
	defer os.Remove(sock)

	old, err := startChild("-listen", addr, "-upstream", echo.Addr().String(), "-handoff", sock)
	if err != nil {
		return err
	}
	defer old.cmd.Process.Kill()
	base := rss(old.cmd.Process.Pid)

	// Each client writes numbered lines, one every 20 ms, until told to
	// stop, and reads them back, checking the order.
	type result struct {
		sent, got int
		err       error
	}
	stopWriting := make(chan struct{})
	results := make(chan result, n)
	var opened sync.WaitGroup
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("tunnel %d: %v", i, err)
		}
		opened.Add(1)
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			sent, got := 0, 0
			check := func() error {
				line, err := r.ReadString('\n')
				if err != nil {
					return err
				}
				if line != strconv.Itoa(got)+"\n" {
					return fmt.Errorf("line %d came back as %q", got, line)
				}
				got++
				return nil
			}
			write := func() error {
				_, err := fmt.Fprintf(c, "%d\n", sent)
				sent++
				return err
			}
			err := write()
			if err == nil {
				err = check()
			}
			opened.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for err == nil {
				select {
				case <-stopWriting:
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					for got < sent && err == nil {
						err = check()
					}
					results <- result{sent, got, err}
					return
				case <-tick.C:
					if err = write(); err == nil {
						err = check()
					}
				}
			}
			results <- result{sent, got, err}
		}()
	}
	opened.Wait()
	held := rss(old.cmd.Process.Pid)

	next, err := startChild("-receive", "-handoff", sock)
	if err != nil {
		return err
	}
	defer next.cmd.Process.Kill()
	before := rss(next.cmd.Process.Pid)
	start := time.Now()
	old.cmd.Process.Signal(syscall.SIGUSR1)
	line, err := next.lines.ReadString('\n')
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("the new relay: %v", err)
	}
	oldErr := old.cmd.Wait()
	time.Sleep(time.Second) // a few more lines through the new relay
	close(stopWriting)
	intact, lines := 0, 0
	var firstErr error
	for range n {
		r := <-results
		lines += r.got
		if r.err == nil && r.got == r.sent {
			intact++
		} else if firstErr == nil {
			firstErr = r.err
		}
	}
	after := rss(next.cmd.Process.Pid)
	fmt.Printf("tunnels: %d (the new relay says %q; old relay exit: %v)\n", n, line[:len(line)-1], oldErr)
	fmt.Printf("old relay RSS: %.1f MB idle, %.1f MB holding the tunnels (%.0f B a tunnel)\n", mb(base), mb(held), float64(held-base)/float64(n))
	fmt.Printf("handover: %v for all (%.1f µs a tunnel); the old relay exited\n", took.Round(time.Microsecond), float64(took.Microseconds())/float64(n))
	fmt.Printf("new relay RSS: %.1f MB before, %.1f MB after\n", mb(before), mb(after))
	fmt.Printf("intact: %d of %d tunnels (%d lines echoed in order, none lost)\n", intact, n, lines)
	if intact != n {
		return fmt.Errorf("%d tunnels lost lines: first %v", n-intact, firstErr)
	}
	return nil
}

func mb(n uint64) float64 { return float64(n) / 1e6 }

// rss is the resident memory of process pid, from /proc/PID/statm.
func rss(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * uint64(os.Getpagesize())
}
