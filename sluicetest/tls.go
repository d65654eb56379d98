package sluicetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// A CA is a throwaway certificate authority for tests that serve TLS:
// NewCA makes one with an ECDSA P-256 key, Issue signs server
// certificates with it, and Pool (or ClientConfig) makes a client trust
// it. Nothing is written to disk unless WriteFiles or IssueFiles is asked.
// A CA is used by one goroutine at a time.
type CA struct {
	// Cert is the CA's own certificate, and PEM its PEM encoding (for
	// curl --cacert, say).
	Cert *x509.Certificate
	PEM  []byte
	// Pool holds Cert, as a client's RootCAs.
	Pool *x509.CertPool

	// OCSPServer, if set, is written into the certificates the CA issues
	// from then on: the URLs of their OCSP responder (see OCSPResponse).
	OCSPServer []string
	// Chain, if set, makes the certificates issued from then on carry
	// the CA's certificate after their own (in IssueFiles' certificate
	// file too), as a server sends its chain: the issuer a server needs
	// to check an OCSP response with.
	Chain bool

	key    *ecdsa.PrivateKey
	serial int64
}

// NewCA makes a certificate authority valid from an hour ago for a day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca, err := newCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// newCA is NewCA for code without a testing.TB (StartTLS).
func newCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluicetest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Pool: pool, key: key, serial: 1}, nil
}

// ClientConfig returns a TLS client config that trusts the CA and asks
// for serverName (the SNI; "" sends none, and then the server's
// certificate is checked against no name).
func (ca *CA) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool, ServerName: serverName}
}

// Issue returns a server certificate signed by the CA for names (DNS
// names, or IP addresses such as "127.0.0.1"), valid from an hour ago
// for a day, with an ECDSA P-256 key. Its Leaf is set.
func (ca *CA) Issue(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	return ca.IssueValid(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), names...)
}

// IssueValid is Issue with the certificate valid from notBefore to
// notAfter: an expired one, say.
func (ca *CA) IssueValid(t testing.TB, notBefore, notAfter time.Time, names ...string) tls.Certificate {
	t.Helper()
	cert, err := ca.issue(notBefore, notAfter, names)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// issue is IssueValid for code without a testing.TB (StartTLS).
func (ca *CA) issue(notBefore, notAfter time.Time, names []string) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.issuePEM(notBefore, notAfter, names)
	if err != nil {
		return tls.Certificate{}, err
	}
	if ca.Chain {
		certPEM = append(certPEM, ca.PEM...)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// IssueFiles is Issue, written as PEM files in dir: it returns the
// certificate file's name and the key file's. Files already there under
// those names (NAME.crt and NAME.key, for the first name) are replaced.
func (ca *CA) IssueFiles(t testing.TB, dir string, names ...string) (certFile, keyFile string) {
	t.Helper()
	return ca.IssueFilesValid(t, dir, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), names...)
}

// IssueFilesValid is IssueFiles with the certificate valid from
// notBefore to notAfter.
func (ca *CA) IssueFilesValid(t testing.TB, dir string, notBefore, notAfter time.Time, names ...string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := ca.issuePEM(notBefore, notAfter, names)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Chain {
		certPEM = append(certPEM, ca.PEM...)
	}
	base := "cert"
	if len(names) > 0 {
		base = names[0]
	}
	certFile, keyFile = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key")
	for name, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		// Written aside and renamed, so a server reading the files
		// meanwhile sees the old pair or the new one.
		tmp := name + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, name); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// WriteFiles writes the CA's certificate as a PEM file in dir and
// returns its name (for curl --cacert).
func (ca *CA) WriteFiles(t testing.TB, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(name, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func (ca *CA) issuePEM(notBefore, notAfter time.Time, names []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		OCSPServer:   ca.OCSPServer,
	}
	if len(names) > 0 {
		tmpl.Subject.CommonName = names[0]
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// OCSPResponse returns an OCSP response (RFC 6960) signed by the CA
// saying that cert, which it issued, has status (ocsp.Good,
// ocsp.Revoked or ocsp.Unknown) from thisUpdate until nextUpdate (zero:
// none given): what an OCSP responder started by a test answers. Unlike
// the CA's other methods it may be called from any goroutine (the
// responder's handlers).
func (ca *CA) OCSPResponse(t testing.TB, cert *x509.Certificate, status int, thisUpdate, nextUpdate time.Time) []byte {
	t.Helper()
	tmpl := ocsp.Response{
		Status:       status,
		SerialNumber: cert.SerialNumber,
		ThisUpdate:   thisUpdate,
		NextUpdate:   nextUpdate,
	}
	if status == ocsp.Revoked {
		tmpl.RevokedAt = thisUpdate
		tmpl.RevocationReason = ocsp.KeyCompromise
	}
	der, err := ocsp.CreateResponse(ca.Cert, ca.Cert, tmpl, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
