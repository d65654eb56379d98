package tlscert_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/bench/tlscert"
)

// Write's pair loads as a TLS certificate with an ECDSA P-256 key, and
// Pool's pool verifies it for localhost and 127.0.0.1.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := tlscert.Write(cert, key); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key %T, want an ECDSA P-256 key", pair.PrivateKey)
	}
	pool, err := tlscert.Pool(cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := tlscert.Pool(key); err == nil {
		t.Error("Pool of a key file: no error")
	}
}
