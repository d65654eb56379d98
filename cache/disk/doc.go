// Package disk is a store of objects on disk for the HTTP cache: one
// file per object under a directory, shared by every process that opens
// the directory (the worker processes of a master), kept across
// restarts, and read with sendfile(2) on a hit.
//
//	s, _ := disk.Open("/var/cache/sluice", disk.Options{Size: 10 << 30})
//	w, _ := s.Create(key, head)      // head: the caller's metadata
//	w.Write(body)                    // readers of w.Object() see it now
//	w.Commit()                       // published under key
//	o, _ := s.Get(key)               // in this process or another
//	o.SendTo(pw, 0, -1, nil)         // pipe.SendFile of the body
//	o.Close()
//
// # Files
//
// An object's file holds a 32-byte preamble, its key, its head and its
// body; it is named by the first 128 bits of SHA-256 of the key, in hex,
// under two levels of directories taken from the name's first four
// digits (dir/3f/a0/3fa0…), so no directory grows past what the objects
// need. The key in the file is checked on every Get, so that two keys
// with one hash could never be confused. A writer writes a temporary
// file in its Store's directory under dir/tmp, and Commit sets the
// body's length in the preamble and renames the file into place: a reader, in
// any process, finds either the whole object or the one before.
// Readers in the writer's own process follow the body as it is written
// (Writer.Object), so a response is sent to every client waiting on it
// while it is stored. A file is never changed once published: a purge,
// an eviction or a newer object unlinks it, and readers that have it
// open read it to the end.
//
// # Sharing
//
// nginx keeps its shared index in shared memory, with a loader process
// that fills it from the files at start and a manager process that
// evicts. Here the directory is the shared index: a Get opens the file
// its key names, so an object another process stored is found at once,
// and one it removed is not. Each process keeps a small index of its
// own (under 100 bytes an object, bounded by Options.MaxObjects) that
// holds no keys, only sizes and times of last use, to choose what to
// evict. No shared memory to map and keep consistent across crashes,
// and no manager process: the cost is one open(2) per lookup, as nginx
// pays without open_file_cache.
//
// Every change to the tree (a publication, a removal) is made holding
// the flock of dir/lock, which also holds the total bytes stored, and
// updates that total in the same critical section: the budget is exact
// across processes, and a writer pays a lock, a stat(2) and an 8-byte
// read and write per object, while hits take no lock at all. The
// critical section costs 2.7 µs (BenchmarkCounter), against 20 µs an
// object for the other way, a periodic scan that recounts the files
// (BenchmarkRescan: 20 ms for 1,000), which would also hold writes back
// while it recounts, 20 s for a million objects. A process that
// takes the total over Options.Size evicts its least recently used
// objects, learning the other processes' objects by a Rescan when it
// knows too few. A hit sets the file's mtime when this process last
// set or saw it over a minute before, so that a Rescan gives every
// process much the same order of last use.
// Without flock (Windows, Plan 9) only one process may use a directory,
// and the package counts on Unix's files, which a reader holds open
// while they are unlinked or replaced.
//
// # Restarts and crashes
//
// Open rebuilds the index from the files: a file that is not a complete
// object (its body length unset, its size not the sum of its parts, its
// key not hashing to its name) is removed. Each Store holds the
// flock(2) of a lock file beside its directory of temporary files while
// it is open; Open and Rescan remove the directories whose lock no one
// holds, which a killed process left, with the temporary files in them. A process killed
// between publishing an object and counting it leaves the total wrong
// until the next Rescan, which recounts: call Rescan after a worker
// dies, or now and then.
package disk
