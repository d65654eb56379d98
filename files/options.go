package files

import "time"

// Options tunes a Server. The zero value gives the defaults documented on
// each field.
type Options struct {
	// Expiry is how long what the Server learned about a path (its file's
	// metadata and content, or that it is missing) is trusted before the
	// file system is asked again. Zero means DefaultExpiry; a negative
	// value means every request checks the file system (content held in
	// memory is still reused while the file is unchanged).
	Expiry time.Duration

	// MaxMemFile is the size up to which a file's content is held in
	// memory and written with its header in one write. Zero means
	// DefaultMaxMemFile; negative holds no content in memory.
	MaxMemFile int64

	// MaxMemBytes bounds the total content held in memory; files beyond it
	// are read from disk on each request. Zero means DefaultMaxMemBytes.
	MaxMemBytes int64

	// MaxEntries bounds the number of cached paths (including paths found
	// missing). Zero means DefaultMaxEntries.
	MaxEntries int

	// Index is the file served for a request ending in a slash. Empty
	// means "index.html".
	Index string
}

// Defaults for the zero fields of Options.
const (
	DefaultExpiry      = time.Second
	DefaultMaxMemFile  = 64 << 10
	DefaultMaxMemBytes = 32 << 20
	DefaultMaxEntries  = 10000
	DefaultIndex       = "index.html"
)

func (o Options) withDefaults() Options {
	if o.Expiry == 0 {
		o.Expiry = DefaultExpiry
	}
	if o.Expiry < 0 {
		o.Expiry = 0
	}
	if o.MaxMemFile == 0 {
		o.MaxMemFile = DefaultMaxMemFile
	}
	if o.MaxMemBytes <= 0 {
		o.MaxMemBytes = DefaultMaxMemBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Index == "" {
		o.Index = DefaultIndex
	}
	return o
}
