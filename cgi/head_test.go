package cgi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

// parseHead is ParseHead's result as one string: "status|name: value|…".
func parseHead(head string) (string, error) {
	var b strings.Builder
	status, err := ParseHead([]byte(head), func(name, value string) {
		b.WriteString("|" + name + ": " + value)
	})
	if err != nil {
		return "", err
	}
	return strconv.Itoa(status) + b.String(), nil
}

func TestParseHead(t *testing.T) {
	for _, tc := range []struct {
		head, want string // want "" for an error
	}{
		{"Content-Type: text/html\r\n", "0|Content-Type: text/html"},
		{"Content-type: text/html\nX-A:  b \t\n", "0|Content-type: text/html|X-A: b"},
		{"Status: 404 Not Found\r\nContent-Type: text/plain\r\n", "404|Content-Type: text/plain"},
		{"Location: /x\r\n", "302|Location: /x"},
		{"Status: 301\r\nLocation: https://a/\r\n", "301|Location: https://a/"},
		{"Content-Type: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n", "0|Content-Type: a|Content-Length: 3"},
		{"Content-Type: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nTrailer: x\r\nKeep-Alive: 1\r\n", "0|Content-Type: a"},
		{"Content-Type: a\x01b\r\n", "0|Content-Type: a b"},
		{"X-Powered-By: PHP\r\n", ""},                                         // none of Content-Type, Location, Status
		{"Content-Type: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n", ""}, // conflicting lengths
		{"Content-Type: a\r\nX Y: b\r\n", ""},                                 // not a token
		{"Content-Type: a\r\nX\x01Y: b\r\n", ""},                              //
		{"Content-Type: a\r\n: b\r\n", ""},                                    // no name
		{"Content-Type: a\r\nno colon\r\n", ""},                               //
		{"Status: 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nContent-Type: text/html\r\n", "0|Link: </a.css>; rel=preload|Content-Type: text/html"}, // 1xx: not a final status, ignored
		{"Status: 100 Continue\r\nContent-Type: a\r\n", "0|Content-Type: a"},
		{"Status: 101\r\nContent-Type: a\r\n", "0|Content-Type: a"},
		{"Status: 103\r\nLocation: /x\r\n", "302|Location: /x"},
		{"Status: 99\r\n", ""},       // out of range
		{"Status: 600\r\n", ""},      //
		{"Status: abc\r\n", ""},      //
		{"Location:\r\n", ""},        // empty Location
		{" Content-Type: a\r\n", ""}, // obsolete line folding
	} {
		got, err := parseHead(tc.head)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: got %q, want an error", tc.head, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.head, got, err, tc.want)
		}
	}
}

func FuzzParseHead(f *testing.F) {
	for _, s := range []string{"Content-Type: text/html\r\n", "Status: 404 x\nLocation: /a\n", "Content-Length: 1\r\nContent-Length: 2\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		if end, body := HeadEnd(head, 0); end >= 0 && (end > body || body > len(head)) {
			t.Fatalf("HeadEnd %d, %d of %d bytes", end, body, len(head))
		}
		status, err := ParseHead(head, func(name, value string) {
			if !httpgrammar.IsToken([]byte(name)) || httpgrammar.IsHopByHop(name) {
				t.Fatalf("field name %q passed on", name)
			}
			for i := range len(value) {
				if !httpgrammar.IsFieldValueChar(value[i]) {
					t.Fatalf("field value %q passed on", value)
				}
			}
		})
		if err == nil && status != 0 && (status < 200 || status > 599) {
			t.Fatalf("status %d", status)
		}
	})
}
