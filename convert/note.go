package convert

import (
	"cmp"
	"fmt"
	"slices"
)

// Note says that a directive of the input was not translated, and why or
// what to do instead.
type Note struct {
	File      string // the input file the directive is in
	Line      int    // its line, from 1
	Directive string // its name
	Why       string // why it was not translated, or what to do
}

// String returns the note as `sluice convert` prints it:
// `FILE:LINE: directive "NAME": not translated: WHY`.
func (n Note) String() string {
	return fmt.Sprintf("%s:%d: directive %q: not translated: %s", n.File, n.Line, n.Directive, n.Why)
}

// SortNotes drops repeated notes and sorts the others by file and line,
// keeping the order of those of one line.
func SortNotes(notes []Note) []Note {
	seen := map[Note]bool{}
	notes = slices.DeleteFunc(notes, func(n Note) bool {
		dup := seen[n]
		seen[n] = true
		return dup
	})
	slices.SortStableFunc(notes, func(a, b Note) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return notes
}
