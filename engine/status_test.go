package engine

import "testing"

// Status lines use RFC 9110's reason phrases; a code without one gets an
// empty phrase (RFC 9112 §4).
func TestStatusLines(t *testing.T) {
	for code, want := range map[int]string{
		200: "HTTP/1.1 200 OK\r\n",
		413: "HTTP/1.1 413 Content Too Large\r\n",
		414: "HTTP/1.1 414 URI Too Long\r\n",
		416: "HTTP/1.1 416 Range Not Satisfiable\r\n",
		422: "HTTP/1.1 422 Unprocessable Content\r\n",
		599: "HTTP/1.1 599 \r\n",
	} {
		if got := string(appendStatusLine(nil, code)); got != want {
			t.Errorf("status %d: %q, want %q", code, got, want)
		}
	}
}
