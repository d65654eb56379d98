package config

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Format keeps the style of flow lists and maps: one written on one line
// stays on one line, one written over several lines gets one entry a
// line, its closing bracket under its key, and a pretty-printed JSON
// file stays pretty-printed. The result formats to itself and means what
// the input did.
func TestFormatFlowStyles(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a: [x, y] # c\nb: {c: d, e: [f]}\n", "a: [x, y] # c\nb: {c: d, e: [f]}\n"},
		{"", ""},
		{"\n\n", ""},
		{"a: [ x,y ]\n", "a: [x, y]\n"},
		{"a: [x,\n  y]\nb: 1\n", "a: [\n  x,\n  y\n]\nb: 1\n"},
		{"a: [\n    x,\n    y,\n]\n", "a: [\n  x,\n  y\n]\n"},
		{"a: {b: 1,\n  c: 2}\n", "a: {\n  b: 1,\n  c: 2\n}\n"},
		{"a:\n- {b: 1,\n   c: [1,\n   2]}\n", "a:\n  - {\n    b: 1,\n    c: [\n      1,\n      2\n    ]\n  }\n"},
		{"a: [\n  # head\n  x, # after x\n  y\n]\n", "a: [\n  # head\n  x, # after x\n  y\n]\n"},
		{"{\n  \"routes\": [\n    {\n      \"match\": \"/\",\n      \"pipeline\": [\"echo\"]\n    }\n  ]\n}\n",
			"{\n  \"routes\": [\n    {\n      \"match\": \"/\",\n      \"pipeline\": [\"echo\"]\n    }\n  ]\n}\n"},
	} {
		out, err := Format("in.yaml", []byte(tc.in))
		if err != nil {
			t.Errorf("Format(%q): %v", tc.in, err)
			continue
		}
		if string(out) != tc.want {
			t.Errorf("Format:\n%s\ngot:\n%s\nwant:\n%s", tc.in, out, tc.want)
		}
		if again, err := Format("in.yaml", out); err != nil || !bytes.Equal(again, out) {
			t.Errorf("Format is not idempotent on\n%s\ngot:\n%s", out, again)
		}
		var before, after any
		if err := yaml.Unmarshal([]byte(tc.in), &before); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(out, &after); err != nil || !reflect.DeepEqual(before, after) {
			t.Errorf("Format changed the meaning of\n%s\ninto\n%s(%v)", tc.in, out, err)
		}
	}
}

// plainEncoding is data as the encoder writes it on its own: what
// Format writes but for the line breaks in flow collections.
func plainEncoding(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if err := enc.Encode(&doc); err != nil {
			return nil, err
		}
	}
	err := enc.Close()
	return out.Bytes(), err
}

// decodeAll returns the values of the documents in data.
func decodeAll(data []byte) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var vs []any
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return vs, nil
		} else if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
}

// FuzzFormat: the line breaks Format keeps in flow collections change
// neither the meaning of what the encoder writes nor its validity.
func FuzzFormat(f *testing.F) {
	f.Add("a: [x,\n  y]\n")
	f.Add("{\"a\": {\"b\": 1,\n \"c\": [2,\n 3]\n}\n}\n")
	f.Add("a: {b: 1, # c\n  c: 2}\n")
	f.Add("a:\n  - [x, y] # c\n  - {z: [1,\n 2]}\n---\nb: [1,\n 2]\n")
	f.Fuzz(func(t *testing.T, in string) {
		plain, err := plainEncoding([]byte(in))
		if err != nil {
			return
		}
		want, err := decodeAll(plain)
		if err != nil {
			return // the encoder's own failing
		}
		out, err := Format("in.yaml", []byte(in))
		if err != nil {
			t.Fatalf("Format(%q): %v", in, err)
		}
		got, err := decodeAll(out)
		if err != nil {
			t.Fatalf("Format(%q) does not parse: %v\n%s", in, err, out)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Format changed the meaning of\n%q\ninto\n%q", in, out)
		}
	})
}
