package httpgrammar

import "testing"

func TestQValue(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1", 1000, true}, {"1.", 1000, true}, {"1.000", 1000, true}, {"0", 0, true},
		{"0.5", 500, true}, {"0.25", 250, true}, {"0.001", 1, true},
		{"1.001", 0, false}, {"1.5", 0, false}, {"0.0001", 0, false}, {"", 0, false},
		{"-1", 0, false}, {"2", 0, false}, {".5", 0, false}, {"0,5", 0, false}, {"0.a", 0, false},
		{" 0.5", 0, false}, {"0.5 ", 0, false},
	}
	for _, tt := range tests {
		if got, ok := QValue([]byte(tt.in)); got != tt.want || ok != tt.ok {
			t.Errorf("QValue(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzQValue(f *testing.F) {
	for _, s := range []string{"1", "0.5", "0.001", "1.000", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if q, ok := QValue(b); ok && (q < 0 || q > 1000) {
			t.Fatalf("QValue(%q) = %d out of range", b, q)
		}
	})
}
