package htpasswd

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// checkHash reports whether hash is in a supported, well-formed
// format. Its errors never quote the hash.
func checkHash(hash string) error {
	switch {
	case strings.HasPrefix(hash, "$2"):
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return errors.New("bad bcrypt hash")
		}
		return nil
	case strings.HasPrefix(hash, "$5$"), strings.HasPrefix(hash, "$6$"):
		_, err := parseSHACrypt(hash)
		return err
	case strings.HasPrefix(hash, "$apr1$"), strings.HasPrefix(hash, "$1$"):
		_, _, sum, err := parseMD5Crypt(hash)
		if err == nil && len(sum) != 22 {
			err = errors.New("bad MD5 crypt hash")
		}
		return err
	case strings.HasPrefix(hash, "{SHA}"):
		if b, err := base64.StdEncoding.DecodeString(hash[5:]); err != nil || len(b) != sha1.Size {
			return errors.New("bad {SHA} hash")
		}
		return nil
	case len(hash) == 13:
		return errors.New("DES crypt hashes are not supported (use htpasswd -B)")
	}
	return errors.New("unsupported hash format (plain text? use htpasswd -B)")
}

// hashClass names the cost of verifying a password against hash, a
// hash checkHash accepts: hashes of one class take the same work for
// a given password. It is the scheme with its cost parameter:
// "bcrypt/10", "sha-crypt/$6$/5000", "md5-crypt", "sha1".
func hashClass(hash string) string {
	switch {
	case strings.HasPrefix(hash, "$2"):
		cost, _ := bcrypt.Cost([]byte(hash))
		return "bcrypt/" + strconv.Itoa(cost)
	case strings.HasPrefix(hash, "$5$"), strings.HasPrefix(hash, "$6$"):
		st, _ := parseSHACrypt(hash)
		return "sha-crypt/" + hash[:3] + "/" + strconv.Itoa(st.rounds)
	case strings.HasPrefix(hash, "$apr1$"), strings.HasPrefix(hash, "$1$"):
		return "md5-crypt"
	}
	return "sha1"
}

// verifyHash reports whether pw matches hash, comparing in constant
// time. hash has passed checkHash.
func verifyHash(hash string, pw []byte) bool {
	switch {
	case strings.HasPrefix(hash, "$2"):
		return bcrypt.CompareHashAndPassword([]byte(hash), pw) == nil
	case strings.HasPrefix(hash, "$5$"), strings.HasPrefix(hash, "$6$"):
		s, err := parseSHACrypt(hash)
		if err != nil {
			return false
		}
		got := s.sum(pw)
		return subtle.ConstantTimeCompare([]byte(got), []byte(s.encoded)) == 1
	case strings.HasPrefix(hash, "$apr1$"), strings.HasPrefix(hash, "$1$"):
		magic, salt, sum, err := parseMD5Crypt(hash)
		if err != nil {
			return false
		}
		got := md5CryptSum(pw, magic, salt)
		return subtle.ConstantTimeCompare([]byte(got), []byte(sum)) == 1
	case strings.HasPrefix(hash, "{SHA}"):
		want, err := base64.StdEncoding.DecodeString(hash[5:])
		if err != nil {
			return false
		}
		got := sha1.Sum(pw)
		return subtle.ConstantTimeCompare(got[:], want) == 1
	}
	return false
}

// cryptB64 is the alphabet of crypt(3)'s base-64 encoding.
const cryptB64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// cryptB64From24 appends n characters encoding the 24-bit group
// b2 b1 b0, least significant 6 bits first (crypt's b64_from_24bit).
func cryptB64From24(dst []byte, b2, b1, b0 byte, n int) []byte {
	w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
	for range n {
		dst = append(dst, cryptB64[w&0x3f])
		w >>= 6
	}
	return dst
}

// SHA-crypt ($5$ and $6$), after Ulrich Drepper's specification "Unix
// crypt using SHA-256 and SHA-512".

const (
	shaCryptRoundsDefault = 5000
	shaCryptRoundsMin     = 1000
	shaCryptRoundsMax     = 999999999
	shaCryptSaltMax       = 16
)

// shaCryptSetting is a parsed $5$ or $6$ string.
type shaCryptSetting struct {
	is512        bool
	rounds       int
	customRounds bool // "rounds=" was given
	salt         string
	encoded      string // the hash part, "" in a bare setting
}

// parseSHACrypt parses "$5$[rounds=N$]salt[$hash]" (or $6$). As the
// specification requires, the salt is cut to 16 characters and rounds
// are clamped to [1000, 999999999].
func parseSHACrypt(s string) (shaCryptSetting, error) {
	var st shaCryptSetting
	switch {
	case strings.HasPrefix(s, "$5$"):
	case strings.HasPrefix(s, "$6$"):
		st.is512 = true
	default:
		return st, errors.New("not a SHA-crypt string")
	}
	rest := s[3:]
	st.rounds = shaCryptRoundsDefault
	if r, ok := strings.CutPrefix(rest, "rounds="); ok {
		num, after, found := strings.Cut(r, "$")
		n, err := strconv.ParseUint(num, 10, 64)
		if !found || err != nil {
			return st, errors.New("bad SHA-crypt rounds")
		}
		st.rounds = int(min(max(n, shaCryptRoundsMin), shaCryptRoundsMax))
		st.customRounds = true
		rest = after
	}
	salt, enc, _ := strings.Cut(rest, "$")
	if len(salt) > shaCryptSaltMax {
		salt = salt[:shaCryptSaltMax]
	}
	st.salt, st.encoded = salt, enc
	want := 43
	if st.is512 {
		want = 86
	}
	if enc != "" && (len(enc) != want || strings.Trim(enc, cryptB64) != "") {
		return st, errors.New("bad SHA-crypt hash")
	}
	return st, nil
}

// shaCrypt computes crypt(pw, setting) for a $5$ or $6$ setting, as
// crypt(3) would: "$5$rounds=N$salt$hash" (rounds only if given).
func shaCrypt(pw []byte, setting string) (string, error) {
	st, err := parseSHACrypt(setting)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(setting[:3])
	if st.customRounds {
		b.WriteString("rounds=")
		b.WriteString(strconv.Itoa(st.rounds))
		b.WriteByte('$')
	}
	b.WriteString(st.salt)
	b.WriteByte('$')
	b.WriteString(st.sum(pw))
	return b.String(), nil
}

// sum returns the encoded hash of pw under st's salt and rounds: the steps
// of the specification, numbered as there.
func (st shaCryptSetting) sum(pw []byte) string {
	newHash, size := sha256.New, sha256.Size
	if st.is512 {
		newHash, size = sha512.New, sha512.Size
	}
	salt := []byte(st.salt)

	// Steps 4-8: digest B = H(P S P).
	hb := newHash()
	hb.Write(pw)
	hb.Write(salt)
	hb.Write(pw)
	digB := hb.Sum(nil)

	// Steps 1-3, 9-12: digest A.
	ha := newHash()
	ha.Write(pw)
	ha.Write(salt)
	cryptWriteRepeated(ha, digB, len(pw))
	for n := len(pw); n > 0; n >>= 1 {
		if n&1 != 0 {
			ha.Write(digB)
		} else {
			ha.Write(pw)
		}
	}
	digA := ha.Sum(nil)

	// Steps 13-16: the P sequence, from digest DP = H(P repeated len(P) times).
	hp := newHash()
	for range len(pw) {
		hp.Write(pw)
	}
	pSeq := cryptRepeat(hp.Sum(nil), len(pw))

	// Steps 17-20: the S sequence, from digest DS = H(S repeated 16+A[0] times).
	hs := newHash()
	for range 16 + int(digA[0]) {
		hs.Write(salt)
	}
	sSeq := cryptRepeat(hs.Sum(nil), len(salt))

	// Step 21: the rounds.
	hc := newHash()
	cur := digA
	for i := range st.rounds {
		hc.Reset()
		if i&1 != 0 {
			hc.Write(pSeq)
		} else {
			hc.Write(cur)
		}
		if i%3 != 0 {
			hc.Write(sSeq)
		}
		if i%7 != 0 {
			hc.Write(pSeq)
		}
		if i&1 != 0 {
			hc.Write(cur)
		} else {
			hc.Write(pSeq)
		}
		cur = hc.Sum(cur[:0])
	}

	// Step 22: encode, the bytes permuted in groups of three.
	out := make([]byte, 0, 86)
	if size == sha256.Size {
		for k := range 10 {
			a, b, c := k, k+10, k+20
			out = cryptB64Rotated(out, cur, a, b, c, k%3)
		}
		out = cryptB64From24(out, 0, cur[31], cur[30], 3)
	} else {
		for k := range 21 {
			a, b, c := k, k+21, k+42
			out = cryptB64Rotated(out, cur, a, b, c, (3-k%3)%3)
		}
		out = cryptB64From24(out, 0, 0, cur[63], 2)
	}
	return string(out)
}

// cryptB64Rotated encodes sum[a], sum[b], sum[c] rotated right r places
// (r = 1: c, a, b): the order in which the specification lists each
// group, which rotates one way for SHA-256 and the other for SHA-512.
func cryptB64Rotated(dst, sum []byte, a, b, c, r int) []byte {
	switch r {
	case 1:
		a, b, c = c, a, b
	case 2:
		a, b, c = b, c, a
	}
	return cryptB64From24(dst, sum[a], sum[b], sum[c], 4)
}

// cryptWriteRepeated writes n bytes of d repeated to h.
func cryptWriteRepeated(h hash.Hash, d []byte, n int) {
	for ; n > len(d); n -= len(d) {
		h.Write(d)
	}
	h.Write(d[:n])
}

// cryptRepeat returns n bytes of d repeated.
func cryptRepeat(d []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, d[:min(len(d), n-len(out))]...)
	}
	return out
}

// MD5 crypt, Poul-Henning Kamp's FreeBSD algorithm; Apache's $apr1$ is
// the same with another magic string.

// parseMD5Crypt splits "$apr1$salt$hash" (or $1$).
func parseMD5Crypt(s string) (magic, salt, sum string, err error) {
	switch {
	case strings.HasPrefix(s, "$apr1$"):
		magic = "$apr1$"
	case strings.HasPrefix(s, "$1$"):
		magic = "$1$"
	default:
		return "", "", "", errors.New("not an MD5 crypt string")
	}
	salt, sum, _ = strings.Cut(s[len(magic):], "$")
	if len(salt) > 8 {
		salt = salt[:8]
	}
	if sum != "" && (len(sum) != 22 || strings.Trim(sum, cryptB64) != "") {
		return "", "", "", errors.New("bad MD5 crypt hash")
	}
	return magic, salt, sum, nil
}

// md5Crypt computes the full crypt string for pw with magic ("$apr1$" or
// "$1$") and salt (at most 8 characters are used).
func md5Crypt(pw []byte, magic, salt string) string {
	if len(salt) > 8 {
		salt = salt[:8]
	}
	return magic + salt + "$" + md5CryptSum(pw, magic, salt)
}

// md5CryptSum returns the 22-character encoded hash.
func md5CryptSum(pw []byte, magic, salt string) string {
	alt := md5.New()
	alt.Write(pw)
	alt.Write([]byte(salt))
	alt.Write(pw)
	final := alt.Sum(nil)

	ctx := md5.New()
	ctx.Write(pw)
	ctx.Write([]byte(magic))
	ctx.Write([]byte(salt))
	cryptWriteRepeated(ctx, final, len(pw))
	// The original clears final and then, oddly, adds its first byte (a
	// zero) or the password's first byte for each bit of the length.
	for n := len(pw); n > 0; n >>= 1 {
		if n&1 != 0 {
			ctx.Write([]byte{0})
		} else {
			ctx.Write(pw[:1])
		}
	}
	final = ctx.Sum(nil)

	h := md5.New()
	for i := range 1000 {
		h.Reset()
		if i&1 != 0 {
			h.Write(pw)
		} else {
			h.Write(final)
		}
		if i%3 != 0 {
			h.Write([]byte(salt))
		}
		if i%7 != 0 {
			h.Write(pw)
		}
		if i&1 != 0 {
			h.Write(final)
		} else {
			h.Write(pw)
		}
		final = h.Sum(final[:0])
	}

	out := make([]byte, 0, 22)
	out = cryptB64From24(out, final[0], final[6], final[12], 4)
	out = cryptB64From24(out, final[1], final[7], final[13], 4)
	out = cryptB64From24(out, final[2], final[8], final[14], 4)
	out = cryptB64From24(out, final[3], final[9], final[15], 4)
	out = cryptB64From24(out, final[4], final[10], final[5], 4)
	out = cryptB64From24(out, 0, 0, final[11], 2)
	return string(out)
}

// shaHash returns the {SHA} form of pw (for tests and tools; the
// format is weak: unsalted and fast).
func shaHash(pw []byte) string {
	sum := sha1.Sum(pw)
	return "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
}
