package config

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a config file, at a position in it.
type Error struct {
	File      string // the file name as given to Load or Parse
	Line, Col int    // 1-based
	Msg       string
}

// Error formats e as FILE:LINE:COL: message.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors is every problem found in a config file, sorted by position.
// Load and Parse return an Errors when the file is invalid.
type Errors []*Error

// Error returns the errors one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// sort orders the errors by file, in the order of files (the config
// file, then those it includes, as read), then by position, keeping the
// order of discovery between errors at the same position.
func (es Errors) sort(files []string) {
	sort.SliceStable(es, func(i, j int) bool {
		if fi, fj := fileRank(files, es[i].File), fileRank(files, es[j].File); fi != fj {
			return fi < fj
		}
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Col < es[j].Col
	})
}

// fileRank is file's index in files, or len(files) for another.
func fileRank(files []string, file string) int {
	for i, f := range files {
		if f == file {
			return i
		}
	}
	return len(files)
}
