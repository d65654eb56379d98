package httpgrammar

import "testing"

func TestSplitFieldLine(t *testing.T) {
	cases := []struct {
		line, name, value string
		err               error
	}{
		{"Host: example.com", "Host", "example.com", nil},
		{"X-Empty:", "X-Empty", "", nil},
		{"A:\t v \t", "A", "v", nil},
		{"A: caf\xc3\xa9", "A", "caf\xc3\xa9", nil}, // obs-text
		{"no colon", "", "", ErrNoColon},
		{"no\rcolon", "", "", ErrBareCR},
		{"Host : x", "", "", ErrSpaceBeforeColon},
		{"Ho st: x", "", "", ErrFieldName},
		{": x", "", "", ErrFieldName},
		{"A: x\ry", "", "", ErrBareCR},
		{"A: x\x00y", "", "", ErrFieldValue},
		{"A: x\x7fy", "", "", ErrFieldValue},
	}
	for _, c := range cases {
		name, value, err := SplitFieldLine([]byte(c.line))
		if err != c.err || string(name) != c.name || string(value) != c.value {
			t.Errorf("SplitFieldLine(%q) = %q, %q, %v; want %q, %q, %v", c.line, name, value, err, c.name, c.value, c.err)
		}
	}
}

func TestParseContentLength(t *testing.T) {
	for _, c := range []struct {
		v  string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"0042", 42, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false}, {"", 0, false}, {"+1", 0, false},
		{"1 ", 0, false}, {"1,1", 0, false}, {"-1", 0, false},
	} {
		if n, ok := ParseContentLength(c.v); n != c.n || ok != c.ok {
			t.Errorf("ParseContentLength(%q) = %d, %v; want %d, %v", c.v, n, ok, c.n, c.ok)
		}
	}
}

func TestTransferCodings(t *testing.T) {
	for _, c := range []struct {
		lines []string
		err   error
	}{
		{[]string{"chunked"}, nil},
		{[]string{"CHUNKED"}, nil},
		{[]string{"gzip", "chunked"}, ErrTEUnknown},
		{[]string{"chunked, gzip"}, ErrTENotChunked},
		{[]string{"chunked", "chunked"}, ErrTEChunkedTwice},
		{[]string{"gzip"}, ErrTENotChunked},
		{[]string{" , "}, ErrTEMalformed},
		{[]string{"chu nked"}, ErrTEMalformed},
	} {
		var s TransferCodings
		var err error
		for _, l := range c.lines {
			if err = s.Add([]byte(l)); err != nil {
				break
			}
		}
		if err == nil {
			err = s.Verdict()
		}
		if err != c.err {
			t.Errorf("Transfer-Encoding %q: %v; want %v", c.lines, err, c.err)
		}
	}
}

func TestParseChunkLine(t *testing.T) {
	for _, c := range []struct {
		line string
		size int64
		err  error
	}{
		{"0", 0, nil}, {"1a", 26, nil}, {"0010", 16, nil},
		{"5;name=value", 5, nil}, {"5 ; a = \"q\\\"\"", 5, nil},
		{"", 0, ErrChunkSize}, {"x", 0, ErrChunkSize}, {"-1", 0, ErrChunkSize},
		{"8000000000000000", 0, ErrChunkSize},
		{"5 ", 0, ErrChunkExt}, {"5;", 0, ErrChunkExt}, {"5;a=", 0, ErrChunkExt},
		{"5;a=\"open", 0, ErrChunkExt}, {"5 x", 0, ErrChunkExt},
	} {
		if size, err := ParseChunkLine([]byte(c.line)); size != c.size || err != c.err {
			t.Errorf("ParseChunkLine(%q) = %d, %v; want %d, %v", c.line, size, err, c.size, c.err)
		}
	}
}
