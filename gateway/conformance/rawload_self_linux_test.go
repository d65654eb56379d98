//go:build conformance

package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// TestRawLoad checks the counting of rawLoad, which the churn test's
// "no request failed" rests on, against servers that answer each request
// the same way: one connection loop sending 6 requests in all must count
// each as served or failed as the table says, and open the connections
// it says. It needs no cluster.
func TestRawLoad(t *testing.T) {
	const n = 6
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	tests := []struct {
		name   string
		answer string // written after each request
		close  bool   // and then the connection is closed
		served int64
		dials  int64 // 0: refused
		first  string
	}{
		{name: "keep-alive", answer: ok, served: n, dials: 1},
		{name: "chunked with a trailer", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n1;x=y\r\n!\r\n0\r\nT: v\r\n\r\n", served: n, dials: 1},
		{name: "Connection: close", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", close: true, served: n, dials: n},
		{name: "204 without a body", answer: "HTTP/1.1 204 No Content\r\n\r\n", dials: 1, first: "status 204"},
		{name: "503", answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\ngone", dials: 1, first: `status 503: "gone"`},
		{name: "closed unanswered", close: true, dials: n, first: "reading the status line: unexpected EOF"},
		{name: "closed in the head", answer: "HTTP/1.1 200 OK\r\nContent-Le", close: true, dials: n, first: "reading the response head"},
		{name: "short body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok", close: true, dials: n, first: "a short body"},
		{name: "cut chunked body", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", close: true, dials: n, first: "reading a chunk size"},
		{name: "no framing", answer: "HTTP/1.1 200 OK\r\n\r\nok", close: true, dials: n, first: errRawNoFraming.Error()},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", dials: n, first: "a malformed status line"},
		{name: "bare LF", answer: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", dials: n, first: "bare LF"},
		{name: "two lengths", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", dials: n, first: "conflicting Content-Length"},
		{name: "gzip only", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", dials: n, first: "Transfer-Encoding"},
		{name: "a 100 first", answer: "HTTP/1.1 100 Continue\r\n\r\n" + ok, dials: n, first: "an interim response 100"},
		{name: "refused", dials: 0, first: "opening a connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			wantDials := tt.dials
			if tt.dials == 0 {
				ln.Close() // nothing listens: every connection is refused
				wantDials = n
			} else {
				sluicetest.ServeConns(t, ln, func(c net.Conn) {
					br := bufio.NewReader(c)
					for {
						// Read one request head, then answer it.
						if readHead(br) != nil {
							return
						}
						if _, err := c.Write([]byte(tt.answer)); err != nil || tt.close {
							return
						}
					}
				})
			}
			req := []byte("GET / HTTP/1.1\r\nHost: load.test\r\n\r\n")
			l := startRawLoad(t, 1, []string{addr}, req, n, nil)
			l.wait()
			served, failed, first, dials := l.Stop()
			if served != tt.served || failed != n-tt.served || dials != wantDials {
				t.Errorf("served %d, failed %d, %d connections opened; want %d, %d, %d (first failure: %s)", served, failed, dials, tt.served, n-tt.served, wantDials, first)
			}
			if tt.first != "" && !strings.Contains(first, tt.first) {
				t.Errorf("the first failure is %q, want it to say %q", first, tt.first)
			}
			if tt.first == "" && first != "" {
				t.Errorf("a failure: %q", first)
			}
		})
	}
}

// TestRawLoadSample checks that one body in sampleEvery goes to check,
// and that a body check refuses fails its request.
func TestRawLoadSample(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sluicetest.ServeConns(t, ln, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if readHead(br) != nil {
				return
			}
			if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")); err != nil {
				return
			}
		}
	})
	var checked int
	check := func(b []byte) error {
		checked++ // one connection loop: no race
		if string(b) != "body" {
			return errors.New("not the body sent")
		}
		if checked == 2 {
			return errors.New("refused")
		}
		return nil
	}
	l := startRawLoad(t, 1, []string{ln.Addr().String()}, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 3*sampleEvery, check)
	l.wait()
	served, failed, first, _ := l.Stop()
	if checked != 3 || served != 3*sampleEvery-1 || failed != 1 || !strings.Contains(first, "refused") {
		t.Errorf("%d bodies checked, %d served, %d failed (first: %q); want 3, %d, 1 (refused)", checked, served, failed, first, 3*sampleEvery-1)
	}
}

// FuzzReadRawResponse checks that readRawResponse never panics, never
// reads past what it is given, and returns a body only of a response it
// accepted, no longer than the input.
func FuzzReadRawResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 503 x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nffffffffffffffffff\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), 256)
		status, body, keep, err := readRawResponse(br, nil, true)
		if len(body) > len(in) {
			t.Fatalf("a body of %d bytes from %d bytes of input", len(body), len(in))
		}
		if err != nil && keep {
			t.Fatalf("an error (%v) on a connection kept", err)
		}
		if err == nil && (status < 200 || status > 999) {
			t.Fatalf("status %d accepted", status)
		}
	})
}

// readHead reads one request head, up to its empty line.
func readHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return err
		}
	}
}
