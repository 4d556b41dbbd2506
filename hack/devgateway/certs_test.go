package main

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readFiles returns the contents of the certificate files in dir.
func readFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{caFile, certFile, keyFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	return files
}

func TestCertificateIsCreatedThenReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	names := []string{"localhost", "games.localtest"}
	cert, reason, err := loadOrCreateCertificate(dir, names, now)
	if err != nil {
		t.Fatal(err)
	}
	if reason == "" {
		t.Fatal("an empty directory yielded a reused certificate")
	}
	info, err := os.Stat(filepath.Join(dir, keyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, %v; want 0600", keyFile, info.Mode(), err)
	}
	roots := x509.NewCertPool()
	first := readFiles(t, dir)
	roots.AppendCertsFromPEM(first[caFile])
	for _, name := range []string{"localhost", "games.localtest", "127.0.0.1"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("certificate not valid for %s: %v", name, err)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("certificate valid for example.com")
	}

	if _, reason, err := loadOrCreateCertificate(dir, names[:1], now.Add(time.Hour)); err != nil || reason != "" {
		t.Fatalf("second start with a subset of the names: reason %q, %v; want the files reused", reason, err)
	}
	if !bytes.Equal(readFiles(t, dir)[certFile], first[certFile]) {
		t.Error("reusing the certificate rewrote it")
	}

	for _, restart := range []struct {
		what  string
		names []string
		now   time.Time
	}{
		{"a new hostname", append(names, "other.localtest"), now},
		{"a month before expiry", names, now.Add(certLifetime - renewBefore + time.Hour)},
	} {
		before := readFiles(t, dir)
		_, reason, err := loadOrCreateCertificate(dir, restart.names, restart.now)
		if err != nil {
			t.Fatalf("%s: %v", restart.what, err)
		}
		if reason == "" || bytes.Equal(readFiles(t, dir)[caFile], before[caFile]) {
			t.Errorf("%s: certificate reused (reason %q)", restart.what, reason)
		}
	}
}

func TestDamagedCertificateIsReplaced(t *testing.T) {
	dir := t.TempDir()
	names := []string{"localhost"}
	if _, _, err := loadOrCreateCertificate(dir, names, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, caFile), []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, reason, err := loadOrCreateCertificate(dir, names, time.Now()); err != nil || reason == "" {
		t.Fatalf("damaged ca.crt: reason %q, %v; want new files", reason, err)
	}
}
