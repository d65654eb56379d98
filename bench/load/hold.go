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
	OK     int   // connections that got a 2xx response and stayed open
	Failed int   // connections that failed or were closed by the server
	Err    error // the first failure, nil if none

	conns []net.Conn
}

// Hold opens n connections to addr, at most par at a time, makes one
// "GET path" on each, reads the response, and leaves the connection open
// and idle. Each connection must be set up within timeout. The caller
// must Close the result.
func Hold(ctx context.Context, addr, path string, n, par int, timeout time.Duration) *Held {
	h := &Held{conns: make([]net.Conn, n)}
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: sluicebench\r\n\r\n")
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
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := readResponse(bufio.NewReaderSize(c, 4096), false)
	switch {
	case err != nil:
	case resp.status/100 != 2:
		err = fmt.Errorf("status %d", resp.status)
	case resp.close:
		err = io.EOF
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
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
