package sluicetest

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// Client is the HTTP client of Get and Do. It follows no redirect, so a
// test sees the 3xx it was sent; it neither asks for gzip nor decodes it
// behind the test's back, so a test sees the body as the server sent it;
// and it gives up on an exchange after a minute, so a server that hangs
// fails the test instead of stalling it. It is safe for concurrent use;
// its idle connections are shared by every test in the process.
var Client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       time.Minute,
	Transport:     &http.Transport{DisableCompression: true},
}

// Get sends a GET for url with Client, adding the header fields given as
// name, value pairs (a name may repeat), and returns the response with its
// body read into a string and closed. Any error fails the test at once.
func Get(t testing.TB, url string, fields ...string) (*http.Response, string) {
	t.Helper()
	return Send(t, http.MethodGet, url, fields...)
}

// Send is Get with another method: HEAD, OPTIONS, or one the server
// should refuse. The request has no body.
func Send(t testing.TB, method, url string, fields ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Add(fields[i], fields[i+1])
	}
	return Do(t, req)
}

// Do sends req with Client and returns the response with its body read
// into a string and closed. Any error fails the test at once.
func Do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}
