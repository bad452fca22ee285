// Package tlstest makes a throw-away certificate authority and a server
// certificate it signed, for tests that serve HTTPS.
package tlstest

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

// Files are the PEM files of a test PKI.
type Files struct {
	CA   string // the CA certificate: what a client trusts
	Cert string // the server certificate, for 127.0.0.1, ::1 and localhost
	Key  string // the server's private key
}

// New writes a CA and a server certificate signed by it into a new
// t.TempDir().
func New(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := template(1, "wimro test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER := must(x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey))
	ca := must(x509.ParseCertificate(caDER))
	key := newKey(t)
	tmpl := template(2, "wimd")
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey))
	keyDER := must(x509.MarshalPKCS8PrivateKey(key))
	f := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	writePEM(t, f.Cert, "CERTIFICATE", der)
	writePEM(t, f.Key, "PRIVATE KEY", keyDER)
	return f
}

// Pool returns a certificate pool holding the CA.
func (f Files) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		t.Fatal("tlstest: no certificate in the CA file")
	}
	return p
}

// template is a certificate valid from an hour ago for a day.
func template(serial int64, name string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
}

// must(f()) is f's value; f's error (a crypto failure that does not
// happen in practice) panics, which fails the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic("tlstest: " + err.Error())
	}
	return v
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
