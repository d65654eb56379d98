package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the certificates and keys one cluster uses; all are
// generated fresh in its work directory and live only as long as it does.
type pki struct {
	caCert, caKey           string // the cluster CA, which signs both certs below
	servingCert, servingKey string // kube-apiserver's serving certificate
	adminCert, adminKey     string // a client certificate in group system:masters
	saKey, saPub            string // the service account token signing key pair
}

// newPKI writes a CA, a serving certificate for the API server valid for the
// given IP addresses and the in-cluster names, an admin client certificate
// and a service account key pair into dir.
func newPKI(dir string, ips []net.IP) (*pki, error) {
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubecluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeCert(p.caCert, caDER); err != nil {
		return nil, err
	}
	if err := writeKey(p.caKey, caKey); err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now,
		NotAfter:     caTmpl.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  ips,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	if err := issue(p.servingCert, p.servingKey, serving, ca, caKey); err != nil {
		return nil, err
	}
	admin := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "kubecluster-admin", Organization: []string{"system:masters"}},
		NotBefore:    now,
		NotAfter:     caTmpl.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := issue(p.adminCert, p.adminKey, admin, ca, caKey); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.saKey, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func issue(certPath, keyPath string, tmpl, ca *x509.Certificate, caKey crypto.Signer) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("issue %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}
