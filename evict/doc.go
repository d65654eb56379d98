// Package evict is a concurrent map with a byte budget, made for a memory
// store of HTTP responses. Each entry is set with its size in bytes; when the
// sizes add up to more than the budget, Set evicts entries until they fit
// again, and hands each one it let go of to a callback, outside the lock,
// so that the caller can release what the value holds (a body buffer, a
// file).
//
// # Policy
//
// Eviction follows S3-FIFO (Yang et al., "FIFO queues are all you need
// for cache eviction", SOSP 2023), counted in bytes rather than entries:
//
//   - a new key enters a small FIFO queue, which holds a tenth of the
//     budget; when the eviction hand reaches an entry there, the entry
//     moves to the main queue if it was read meanwhile, and is evicted
//     otherwise, its key's hash kept in a ghost list (as many hashes as
//     the Map has entries);
//   - a key set again while its hash is in the ghost list goes straight to
//     the main queue;
//   - the main queue is a FIFO with a 2-bit read counter per entry: the
//     hand evicts an entry whose counter is 0 and gives one with reads
//     another turn, one read less.
//
// So one-time keys (a crawler, a scan) pass through the small queue and
// never push out what is read again, and a read costs a lookup in the
// Map's index (a hash table of its own, by the hash the ghost keeps too)
// under a read lock and an atomic increment: reads do not move entries
// between lists, as they would in an LRU, and run in parallel.
//
// The policy was chosen by measurement against a byte-budgeted LRU,
// W-TinyLFU (github.com/maypok86/otter/v2) and ristretto's TinyLFU;
// docs/cache-store.md has the figures and the commands that give them.
//
// # Limits
//
// The budget counts only the sizes given to Set, not the Map's own
// memory: about 230 bytes per entry with 32-byte string keys, key and
// ghost hash included (TestChurnMillionKeys logs the figure). A caller
// that stores many small entries bounds that, for example by counting a
// minimum size per entry. An entry larger than the budget is not stored.
package evict
