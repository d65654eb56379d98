package engine

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

// SetLimits, SetServerHeader and SetExtraMethods apply to the next
// request of a connection already open, and a new idle timeout to a
// connection already idle.
func TestSetLimitsAppliesToOpenConnections(t *testing.T) {
	s := &Server{Handler: echo, ServerHeader: "a"}
	addr := startServer(t, s)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	long := "/" + strings.Repeat("x", 2000)
	io.WriteString(c, "GET "+long+" HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 200 || resp.Header.Get("Server") != "a" {
		t.Fatalf("before: %d, Server %q", resp.StatusCode, resp.Header.Get("Server"))
	}

	io.WriteString(c, "PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "PROPFIND"); resp.StatusCode != 501 {
		t.Fatalf("PROPFIND before: %d, want 501", resp.StatusCode)
	}

	s.SetLimits(Limits{MaxTargetBytes: 1000})
	s.SetServerHeader("b")
	s.SetExtraMethods([]string{"PROPFIND"})
	io.WriteString(c, "PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "PROPFIND"); resp.StatusCode != 200 {
		t.Errorf("PROPFIND after SetExtraMethods: %d, want 200", resp.StatusCode)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 200 || resp.Header.Get("Server") != "b" {
		t.Errorf("after SetServerHeader: %d, Server %q, want b", resp.StatusCode, resp.Header.Get("Server"))
	}
	io.WriteString(c, "GET "+long+" HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 414 || resp.Header.Get("Server") != "b" {
		t.Errorf("after SetLimits: %d, want 414", resp.StatusCode)
	}

	// A connection idle under the default timeout (60s) is closed by a
	// new one of 50ms, within the test's deadline.
	idle := dial(t, addr)
	ibr := bufio.NewReader(idle)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, ibr, "GET")
	s.SetLimits(Limits{IdleTimeout: 50 * time.Millisecond})
	if rest, err := io.ReadAll(ibr); err != nil || len(rest) != 0 {
		t.Errorf("idle connection after SetLimits: read %q, %v; want a clean EOF", rest, err)
	}
	if s.Limits != (Limits{}) || s.ServerHeader != "a" || s.ExtraMethods != nil {
		t.Errorf("the fields changed: %+v %q %q", s.Limits, s.ServerHeader, s.ExtraMethods)
	}
}
