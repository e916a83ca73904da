package pgtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLS is a cluster's certificate authority, for tests of sslmode and
// client certificates.
type TLS struct {
	t    testing.TB
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	CA   string // the CA certificate's file, for sslrootcert
	Cert string // the server's certificate (127.0.0.1, localhost)
	Key  string // and its key
}

// newTLS makes a CA and a server certificate signed by it.
func newTLS(t testing.TB, dir string) *TLS {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	c := &TLS{t: t, dir: dir, ca: ca, key: key, CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, c.CA, "CERTIFICATE", der)
	c.Cert, c.Key = c.Issue("localhost", true)
	return c
}

// Issue signs a certificate for name (a server's, with 127.0.0.1, or a
// client's: a role's name) and returns its certificate and key files.
func (c *TLS) Issue(name string, server bool) (cert, key string) {
	c.t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &k.PublicKey, c.key)
	if err != nil {
		c.t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	cert, key = filepath.Join(c.dir, name+".pem"), filepath.Join(c.dir, name+".key")
	writePEM(c.t, cert, "CERTIFICATE", der)
	writePEM(c.t, key, "PRIVATE KEY", kder)
	return cert, key
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
