//go:build !unix

package files

import "io/fs"

// inode returns 0: inode numbers are a Unix notion.
func inode(fs.FileInfo) uint64 { return 0 }
