// Command idleconns opens many keep-alive HTTP/1.1 connections to a server,
// makes one GET on each, reads the full response, and then holds all
// connections open and idle. It is the client half of the idle-memory
// benchmark in bench/engine.sh: while it holds, the script reads the server's
// RSS.
//
// Output (stdout), one line each:
//
//	ok=N failed=M      after every connection has had its response
//	READY              connections are open and idle; measure now
//	closed             after the hold ended and everything was closed
//
// The hold ends after -hold or on SIGINT/SIGTERM/SIGUSR1.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "server address host:port")
	n := flag.Int("n", 10000, "number of connections")
	hold := flag.Duration("hold", 30*time.Second, "how long to hold connections idle")
	src := flag.String("src", "", "comma-separated source IPs to spread connections over (e.g. 127.0.0.1,127.0.0.2); empty = kernel's choice")
	path := flag.String("path", "/", "request path")
	par := flag.Int("par", 200, "connections set up concurrently")
	timeout := flag.Duration("timeout", 10*time.Second, "per-connection dial+request timeout")
	flag.Parse()

	raiseNofile(uint64(*n) + 64)

	var srcs []*net.TCPAddr
	for _, s := range strings.Split(*src, ",") {
		if s = strings.TrimSpace(s); s != "" {
			srcs = append(srcs, &net.TCPAddr{IP: net.ParseIP(s)})
		}
	}
	host, _, _ := net.SplitHostPort(*addr)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: idleconns\r\n\r\n", *path, host)

	conns := make([]net.Conn, *n)
	var ok, failed atomic.Int64
	var firstErr sync.Once
	sem := make(chan struct{}, *par)
	var wg sync.WaitGroup
	for i := 0; i < *n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			d := net.Dialer{Timeout: *timeout}
			if len(srcs) > 0 {
				d.LocalAddr = srcs[i%len(srcs)]
			}
			c, err := oneRequest(d, *addr, req, *timeout)
			if err != nil {
				failed.Add(1)
				firstErr.Do(func() { fmt.Fprintln(os.Stderr, "idleconns: first error:", err) })
				return
			}
			conns[i] = c
			ok.Add(1)
		}(i)
	}
	wg.Wait()
	fmt.Printf("ok=%d failed=%d\n", ok.Load(), failed.Load())
	fmt.Println("READY")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1)
	select {
	case <-sig:
	case <-time.After(*hold):
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	fmt.Println("closed")
}

// oneRequest dials addr, sends req, and reads one complete response. It
// returns the still-open connection if the response was 200 OK and the server
// did not ask to close it.
func oneRequest(d net.Dialer, addr, req string, timeout time.Duration) (net.Conn, error) {
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body) // reads exactly Content-Length
		resp.Body.Close()
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %s", resp.Status)
		}
		if err == nil && resp.Close {
			err = fmt.Errorf("server closed keep-alive connection")
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// raiseNofile raises the soft RLIMIT_NOFILE to at least want, capped by the
// hard limit.
func raiseNofile(want uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	if rl.Cur >= want {
		return
	}
	rl.Cur = min(want, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, "idleconns: setrlimit:", err)
	}
	if rl.Cur < want {
		fmt.Fprintf(os.Stderr, "idleconns: RLIMIT_NOFILE hard limit %d < %d wanted\n", rl.Max, want)
	}
}
