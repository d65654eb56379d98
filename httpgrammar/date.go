package httpgrammar

import "time"

var (
	dayNames     = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	longDayNames = [7]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames   = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// ParseDate parses an HTTP-date (RFC 9110 §5.6.7) in any of its three
// formats: the IMF-fixdate every sender must use ("Sun, 06 Nov 1994
// 08:49:37 GMT") and the two obsolete ones a recipient must accept, the
// rfc850-date ("Sunday, 06-Nov-94 08:49:37 GMT") and the asctime-date
// ("Sun Nov  6 08:49:37 1994"). All three are in GMT: the zone must read
// "GMT", so a date with another zone is not an HTTP-date and ok is false,
// as for any text the grammar does not produce (the grammar is case
// sensitive) or a day the month does not have. A two-digit year is read
// in the century that does not put the date more than 50 years after
// now, as the RFC asks, and a leap second as the second before it. The
// day name is not checked against the date. The result is in UTC;
// ParseDate allocates nothing.
func ParseDate[T ~string | ~[]byte](v T) (t time.Time, ok bool) {
	var year, day, hour, minute, second int
	var month time.Month
	switch {
	case len(v) == 29 && v[3] == ',':
		// IMF-fixdate: day-name "," SP 2DIGIT SP month SP 4DIGIT SP
		// time-of-day SP "GMT".
		if !isName(v[:3], dayNames[:]) || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' || v[16] != ' ' || string(v[25:]) != " GMT" {
			return time.Time{}, false
		}
		day, ok = number(v[5:7])
		month, ok = monthOf(v[8:11], ok)
		year, ok = numberAnd(v[12:16], ok)
		hour, minute, second, ok = timeOfDay(v[17:25], ok)
	case len(v) == 24 && v[3] == ' ':
		// asctime-date: day-name SP month SP ( 2DIGIT / ( SP DIGIT ) )
		// SP time-of-day SP 4DIGIT.
		if !isName(v[:3], dayNames[:]) || v[7] != ' ' || v[10] != ' ' || v[19] != ' ' {
			return time.Time{}, false
		}
		month, ok = monthOf(v[4:7], true)
		if v[8] == ' ' {
			day, ok = numberAnd(v[9:10], ok)
		} else {
			day, ok = numberAnd(v[8:10], ok)
		}
		hour, minute, second, ok = timeOfDay(v[11:19], ok)
		year, ok = numberAnd(v[20:24], ok)
	default:
		// rfc850-date: day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP
		// time-of-day SP "GMT".
		comma := -1
		for i := 0; i < len(v) && i < 10; i++ {
			if v[i] == ',' {
				comma = i
				break
			}
		}
		if comma < 0 || !isName(v[:comma], longDayNames[:]) {
			return time.Time{}, false
		}
		r := v[comma+1:]
		if len(r) != 23 || r[0] != ' ' || r[3] != '-' || r[7] != '-' || r[10] != ' ' || string(r[19:]) != " GMT" {
			return time.Time{}, false
		}
		day, ok = number(r[1:3])
		month, ok = monthOf(r[4:7], ok)
		year, ok = numberAnd(r[8:10], ok)
		hour, minute, second, ok = timeOfDay(r[11:19], ok)
		if ok {
			year = fullYear(year, time.Now().UTC().Year())
		}
	}
	if !ok || day < 1 || hour > 23 || minute > 59 || second > 60 {
		return time.Time{}, false
	}
	// A leap second (second 60, which the grammar allows) is read as the
	// second before it, so that it does not carry into the next day.
	t = time.Date(year, month, day, hour, minute, min(second, 59), 0, time.UTC)
	if t.Day() != day { // 31 Apr, 29 Feb of a common year
		return time.Time{}, false
	}
	return t, true
}

// fullYear reads the two-digit year yy in the century that does not put
// it more than 50 years after the year now (RFC 9110 §5.6.7).
func fullYear(yy, now int) int {
	y := now - now%100 + yy
	if y > now+50 {
		y -= 100
	}
	return y
}

// isName reports whether s is one of names.
func isName[T ~string | ~[]byte](s T, names []string) bool {
	for _, n := range names {
		if string(s) == n {
			return true
		}
	}
	return false
}

// monthOf returns the month s names, if ok and s names one.
func monthOf[T ~string | ~[]byte](s T, ok bool) (time.Month, bool) {
	if !ok {
		return 0, false
	}
	for i, n := range monthNames {
		if string(s) == n {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

// number reads s, all decimal digits.
func number[T ~string | ~[]byte](s T) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, len(s) > 0
}

// numberAnd is number(s) if ok.
func numberAnd[T ~string | ~[]byte](s T, ok bool) (int, bool) {
	if !ok {
		return 0, false
	}
	return number(s)
}

// timeOfDay reads "hh:mm:ss", if ok.
func timeOfDay[T ~string | ~[]byte](s T, ok bool) (h, m, sec int, _ bool) {
	if !ok || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, false
	}
	h, ok = number(s[0:2])
	m, ok = numberAnd(s[3:5], ok)
	sec, ok = numberAnd(s[6:8], ok)
	return h, m, sec, ok
}
