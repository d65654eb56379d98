package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Held is a set of idle keep-alive connections opened by Hold.
type Held struct {
	OK     int   // connections held: every request on them got a 2xx response and they stayed open
	Failed int   // connections that failed or were closed by the server
	Err    error // the first failure, nil if none

	conns []net.Conn
	req   []byte // the request each connection made
}

// Hold opens n connections to addr, at most par at a time, makes one
// "GET path" on each, reads the response, and leaves the connection open
// and idle. Each connection must be set up within timeout. The caller
// must Close the result.
func Hold(ctx context.Context, addr, path string, n, par int, timeout time.Duration) *Held {
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: sluicebench\r\n\r\n")
	h := &Held{conns: make([]net.Conn, n), req: req}
	sem := make(chan struct{}, max(par, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := holdOne(addr, req, timeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				h.Failed++
				if h.Err == nil {
					h.Err = err
				}
				return
			}
			h.conns[i] = c
			h.OK++
		}()
	}
	wg.Wait()
	return h
}

func holdOne(addr string, req []byte, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if err := exchange(c, req, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// exchange sends req on c and reads the response, within timeout; it
// fails unless the response is a 2xx that leaves the connection open.
func exchange(c net.Conn, req []byte, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(req); err != nil {
		return err
	}
	resp, err := readResponse(bufio.NewReaderSize(c, 4096), false)
	switch {
	case err != nil:
		return err
	case resp.status/100 != 2:
		return fmt.Errorf("status %d", resp.status)
	case resp.close:
		return io.EOF
	}
	c.SetDeadline(time.Time{})
	return nil
}

// Again makes the same request once more on every held connection, at
// most par at a time, each within timeout, as clients that were idle
// speaking again. It returns how many got a 2xx response and stayed open;
// the others are closed and no longer held, and counted in Failed (the
// first failure in Err, if none was there).
func (h *Held) Again(ctx context.Context, par int, timeout time.Duration) int {
	sem := make(chan struct{}, max(par, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := 0
	for i, c := range h.conns {
		if c == nil {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := exchange(c, h.req, timeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				c.Close()
				h.conns[i] = nil
				h.OK--
				h.Failed++
				if h.Err == nil {
					h.Err = err
				}
				return
			}
			ok++
		}()
	}
	wg.Wait()
	return ok
}

// Close closes every held connection.
func (h *Held) Close() {
	for i, c := range h.conns {
		if c != nil {
			c.Close()
			h.conns[i] = nil
		}
	}
}
