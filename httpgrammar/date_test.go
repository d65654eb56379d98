package httpgrammar_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

func TestParseDate(t *testing.T) {
	nov6 := time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time // zero: not an HTTP-date
	}{
		// RFC 9110 §5.6.7's three examples.
		{"Sun, 06 Nov 1994 08:49:37 GMT", nov6},
		{"Sunday, 06-Nov-94 08:49:37 GMT", nov6},
		{"Sun Nov  6 08:49:37 1994", nov6},
		{"Sun Nov 16 08:49:37 1994", nov6.AddDate(0, 0, 10)},
		// The day name is not checked against the date.
		{"Mon, 06 Nov 1994 08:49:37 GMT", nov6},
		// Other zones, or GMT spelt otherwise, are not HTTP-dates.
		{"Sun, 06 Nov 1994 08:49:37 UTC", time.Time{}},
		{"Sunday, 06-Nov-94 08:49:37 PST", time.Time{}},
		{"Sunday, 06-Nov-94 08:49:37 UTC", time.Time{}},
		{"Sun, 06 Nov 1994 08:49:37 gmt", time.Time{}},
		{"Sun, 06 Nov 1994 08:49:37 +0000", time.Time{}},
		// The grammar is case sensitive.
		{"sun, 06 Nov 1994 08:49:37 GMT", time.Time{}},
		{"Sun, 06 nov 1994 08:49:37 GMT", time.Time{}},
		{"sunday, 06-Nov-94 08:49:37 GMT", time.Time{}},
		// Days the month lacks, and times out of range.
		{"Thu, 31 Apr 2025 00:00:00 GMT", time.Time{}},
		{"Sun, 29 Feb 2025 00:00:00 GMT", time.Time{}},
		{"Sun, 00 Nov 1994 08:49:37 GMT", time.Time{}},
		{"Sun, 06 Nov 1994 24:00:00 GMT", time.Time{}},
		{"Sun, 06 Nov 1994 08:60:00 GMT", time.Time{}},
		{"Sat, 29 Feb 2020 12:00:00 GMT", time.Date(2020, 2, 29, 12, 0, 0, 0, time.UTC)},
		// A leap second is the second before it, and stays in its day.
		{"Wed, 31 Dec 2016 23:59:60 GMT", time.Date(2016, 12, 31, 23, 59, 59, 0, time.UTC)},
		// Wrong widths, separators and digits.
		{"Sun, 6 Nov 1994 08:49:37 GMT", time.Time{}},
		{"Sun, 06 Nov 1994 08:49:37 GMT ", time.Time{}},
		{"Sun, 06 Nov 1994 08-49-37 GMT", time.Time{}},
		{"Sun, 06 Nov 19x4 08:49:37 GMT", time.Time{}},
		{"Sun Nov 6 08:49:37 1994", time.Time{}},
		{"Sun Nov  6 08:49:37  994", time.Time{}},
		{"Sun Nov 0x 08:49:37 1994", time.Time{}},
		{"Sunday, 06-Nov-1994 08:49:37 GMT", time.Time{}},
		{"Sunday,06-Nov-94 08:49:37 GMT", time.Time{}},
		{"Sundae, 06-Nov-94 08:49:37 GMT", time.Time{}},
		{"", time.Time{}}, {"0", time.Time{}}, {",", time.Time{}},
		{"Sun, 06 Nov 1994 08:49:37 GMT\x00", time.Time{}},
	} {
		got, ok := httpgrammar.ParseDate(c.in)
		if ok != !c.want.IsZero() || !got.Equal(c.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v", c.in, got, ok, c.want)
		}
		if gb, okb := httpgrammar.ParseDate([]byte(c.in)); okb != ok || !gb.Equal(got) {
			t.Errorf("ParseDate([]byte(%q)) = %v, %v; the string gave %v, %v", c.in, gb, okb, got, ok)
		}
	}
}

// TestParseDateTwoDigitYears: an rfc850-date's year is read in the
// century that puts it at most 50 years after this year.
func TestParseDateTwoDigitYears(t *testing.T) {
	now := time.Now().UTC().Year()
	for _, ahead := range []int{-49, -1, 0, 1, 49, 50, 51, 99} {
		want := now + ahead
		if ahead > 50 {
			want -= 100
		}
		in := time.Date(now+ahead, time.March, 1, 0, 0, 0, 0, time.UTC).Format("Monday, 02-Jan-06 15:04:05 GMT")
		got, ok := httpgrammar.ParseDate(in)
		if !ok || got.Year() != want {
			t.Errorf("ParseDate(%q) = %v, %v; want the year %d", in, got, ok, want)
		}
	}
}

func TestParseDateAllocs(t *testing.T) {
	b := []byte("Sun, 06 Nov 1994 08:49:37 GMT")
	if n := testing.AllocsPerRun(100, func() { httpgrammar.ParseDate(b) }); n != 0 {
		t.Errorf("ParseDate allocates %v times", n)
	}
}

// FuzzParseDate checks ParseDate against net/http's ParseTime: a date
// one accepts the other reads as the same instant (up to the century of
// a two-digit year, which net/http fixes and RFC 9110 does not, and a
// leap second, which net/http refuses), and a date net/http accepts in
// one of the three formats exactly as it would write it, ParseDate
// accepts too.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sunday, 06-Nov-94 08:49:37 PST", "Sat, 29 Feb 2020 12:00:00 GMT", "Thu, 31 Apr 2025 00:00:00 GMT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := httpgrammar.ParseDate(s)
		ref, err := http.ParseTime(s)
		if ok && err == nil && !got.Equal(ref) {
			centuryApart := got.Year()%100 == ref.Year()%100 &&
				got.Month() == ref.Month() && got.Day() == ref.Day() &&
				got.Hour() == ref.Hour() && got.Minute() == ref.Minute() && got.Second() == ref.Second()
			if !centuryApart {
				t.Fatalf("%q: ParseDate %v, net/http %v", s, got, ref)
			}
		}
		if err == nil && !ok {
			for _, layout := range []string{http.TimeFormat, "Monday, 02-Jan-06 15:04:05 GMT", time.ANSIC} {
				if ref.UTC().Format(layout) == s {
					t.Fatalf("%q: net/http reads %v, ParseDate refuses it", s, ref)
				}
			}
		}
	})
}
