package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The files the gateway keeps in --cert-dir.
const (
	caFile   = "ca.crt"  // the CA clients trust
	certFile = "tls.crt" // the serving certificate
	keyFile  = "tls.key" // its private key
)

// Certificate lifetimes: a year, replaced when a month is left.
const (
	certLifetime = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// loopbackIP is the IP address every serving certificate names.
var loopbackIP = net.IPv4(127, 0, 0, 1)

// loadOrCreateCertificate returns the serving certificate in dir when it is
// signed by dir's CA and stays valid for names and 127.0.0.1 for at least
// renewBefore; otherwise it writes a new CA and certificate. reason says why
// it made new ones, or is "" when it reused the files.
func loadOrCreateCertificate(dir string, names []string, now time.Time) (cert tls.Certificate, reason string, err error) {
	cert, err = loadCertificate(dir, names, now)
	if err == nil {
		return cert, "", nil
	}
	reason = err.Error()
	if errors.Is(err, os.ErrNotExist) {
		reason = "no certificate yet"
	}
	if err := createCertificate(dir, names, now); err != nil {
		return tls.Certificate{}, "", err
	}
	cert, err = loadCertificate(dir, names, now)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("checking the certificate just written to %s: %w", dir, err)
	}
	return cert, reason, nil
}

// loadCertificate reads the serving certificate in dir and checks it
// against dir's CA for names and 127.0.0.1, renewBefore from now.
func loadCertificate(dir string, names []string, now time.Time) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return tls.Certificate{}, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		return tls.Certificate{}, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return tls.Certificate{}, fmt.Errorf("%s holds no certificate", caFile)
	}
	for _, name := range slices.Concat(names, []string{loopbackIP.String()}) {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now.Add(renewBefore)})
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("certificate not valid for %s until %s: %w", name, now.Add(renewBefore).Format(time.DateOnly), err)
		}
	}
	return cert, nil
}

// createCertificate writes a new CA and a serving certificate it signs for
// names and 127.0.0.1 to dir. The CA may only sign for those names, and its
// key is never written: trusting ca.crt trusts this gateway and nothing
// else. Serial numbers are left to x509.CreateCertificate, which picks
// random ones.
func createCertificate(dir string, names []string, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		Subject:                     pkix.Name{Organization: []string{"Roomkeeper development"}, CommonName: "Roomkeeper devgateway CA"},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(certLifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names,
		PermittedIPRanges:           []*net.IPNet{{IP: loopbackIP.To4(), Mask: net.CIDRMask(32, 32)}},
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"Roomkeeper development"}, CommonName: names[0]},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    names,
		IPAddresses: []net.IP{loopbackIP},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name, block string
		der         []byte
		perm        os.FileMode
	}{
		{keyFile, "PRIVATE KEY", keyDER, 0o600},
		{certFile, "CERTIFICATE", leafDER, 0o644},
		{caFile, "CERTIFICATE", caDER, 0o644},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.block, Bytes: f.der})
		if err := writeFileAtomic(filepath.Join(dir, f.name), data, f.perm); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic replaces path with data: readers see the old file or the
// new one, never part of it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
