// Package htpasswd checks passwords against an htpasswd file, as HTTP
// Basic authentication needs (the basic_auth component is its adapter):
// it parses the file, verifies the hashes Apache's htpasswd and crypt(3)
// write, reads the file again when it changes, and fails closed.
//
// # The file
//
// One user per line, "name:hash"; blank lines and lines starting with '#'
// are skipped. The hash formats understood are:
//
//	$2y$, $2a$, $2b$   bcrypt (htpasswd -B), via golang.org/x/crypto/bcrypt
//	$5$, $6$           SHA-256 / SHA-512 crypt (Drepper, "Unix crypt using
//	                   SHA-256 and SHA-512"; openssl passwd -5 / -6;
//	                   htpasswd -2 / -5 in Apache 2.4.59+)
//	$apr1$             Apache's MD5 crypt (htpasswd -m, the old default)
//	$1$                MD5 crypt (same algorithm, another magic string)
//	{SHA}              base64 of an unsalted SHA-1 (htpasswd -s): weak,
//	                   accepted only for compatibility
//
// DES crypt (htpasswd -d), plain-text passwords and anything else are
// not verified: such a line locks its user (a locked "bob:!" as in
// /etc/shadow, a half-edited line, garbage), and so does a user listed
// twice. The file as it is counts, user by user: one bad line never keeps
// an older version of the file in force, and never lets anyone in. Such
// lines are logged once per version of the file, naming the line and the
// user (escaped), never the hash.
//
// # Reloading
//
// Open reads the file; File.Users reads it again when it has changed
// (another modification time, size or inode), checked at most once a
// second. While the file cannot be read — deleted, unreadable — Users
// returns an error and no users, so every request is refused; the error
// is logged once, and the file is used again as soon as it can be read.
//
// # Timing
//
// Users.Check compares in constant time, and the work of a check does
// not depend on the user: every check verifies the password once against
// each class of hash the file holds — a scheme with its cost parameter,
// such as bcrypt at cost 10 or SHA-512 crypt at 5000 rounds — the user's
// own hash for its class and a hash of another user for every other
// class; an unknown or locked user gets one of another user's for all.
// So neither the time of a refusal nor that of an acceptance tells
// whether a user exists or which scheme their hash uses; a file mixing
// schemes costs the sum of its classes per check. A password longer than
// MaxPassword (255 bytes, the longest Apache's htpasswd accepts) is
// refused without being hashed, whoever the user: SHA-crypt and MD5
// crypt cost more the longer the password, and the bound keeps a client
// from making each check dearer. Credentials that
// matched are remembered (by a SHA-256 of user, password and hash, up to
// 1024 of them, forgotten when the file changes) so that a client
// sending them with every request does not pay bcrypt's cost every time.
package htpasswd
