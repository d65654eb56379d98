// Package conditional evaluates the conditional and range fields of a GET
// or HEAD against a representation, as RFC 9110 §13 and §14 say: the
// preconditions If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since (Precondition), If-Range (RangeApplies), and the
// Range field (ParseRange), with what a 206 or 416 response needs
// (ContentRange, UnsatisfiedRange, Multipart for multipart/byteranges).
//
// The static file server (package files) answers with it; a source that
// answers from stored responses does the same, so that a file and a
// stored response meet a conditional request the same way.
//
// # Preconditions
//
// A representation's validators (Validators) are its entity tag, weak or
// strong, and its Last-Modified date. The fields are evaluated in the
// order of RFC 9110 §13.2.2: If-Match (strong comparison; "*" matches an
// existing representation) and, without it, If-Unmodified-Since answer
// 412; then If-None-Match (weak comparison) and, without it,
// If-Modified-Since answer 304; then If-Range decides whether a Range
// field is honoured (an entity tag by strong comparison, or the exact
// Last-Modified date). Repeated lines of a list field are one list; a
// date field sent twice, or not a valid HTTP-date, is ignored.
//
// # Ranges
//
// A Range field may ask for ranges, suffixes ("bytes=-500") and open
// ends ("bytes=9500-"). Overlapping ranges and ranges at most 80 bytes
// apart are merged, and the parts keep the order they were asked in (a
// merged range where its first member was), so the parts never add up to
// more than the representation. A field with more ranges after merging
// than the caller allows, more than 1000 range-specs, another unit or
// invalid syntax is ignored (the whole representation is sent); one whose
// ranges all start past the end is unsatisfiable (416).
//
// # Buffers and goroutines
//
// The functions keep nothing they are given: a request's fields and a
// field value are read during the call only. What they return is new and
// the caller's. Every function is safe for concurrent use; a Multipart is
// read-only once made and may be shared.
package conditional
