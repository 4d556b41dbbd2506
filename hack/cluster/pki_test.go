package main

import (
	"crypto/x509"
	"net"
	"testing"
)

// TestThePKIIssuesWhatTheClusterChecks: every identity verifies against
// the CA for its use (a serving certificate for its names and addresses,
// a client certificate with its user and groups), and a second load keeps
// the CA and the certificates already issued.
func TestThePKIIssuesWhatTheClusterChecks(t *testing.T) {
	dir := t.TempDir()
	p, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := append(controlPlaneIdentities(), nodeIdentities(nodes(2)[1])...)
	for _, id := range ids {
		if err := p.issue(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	for _, id := range ids {
		crt, _, err := readPair(p.path(id.name))
		if err != nil {
			t.Fatal(err)
		}
		usage := x509.ExtKeyUsageClientAuth
		if id.server {
			usage = x509.ExtKeyUsageServerAuth
		}
		if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s: %v", id.name, err)
		}
		for _, name := range id.dnsNames {
			if err := crt.VerifyHostname(name); err != nil {
				t.Errorf("%s: %v", id.name, err)
			}
		}
		for _, ip := range id.addresses {
			if err := crt.VerifyHostname(ip.String()); err != nil {
				t.Errorf("%s: %v", id.name, err)
			}
		}
		if crt.Subject.CommonName != id.commonName || len(crt.Subject.Organization) != len(id.organizations) {
			t.Errorf("%s: subject %v, want %s %v", id.name, crt.Subject, id.commonName, id.organizations)
		}
	}
	kubelet, _, _ := readPair(p.path("roomkeeper-node-2-kubelet"))
	if !kubelet.IPAddresses[0].Equal(net.ParseIP("10.200.0.12")) {
		t.Errorf("node 2's kubelet serves %v", kubelet.IPAddresses)
	}

	again, err := loadOrCreatePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.ca.Equal(p.ca) {
		t.Error("a second load made a new CA")
	}
	before, _, _ := readPair(p.path("admin"))
	if err := again.issue(ids[1]); err != nil {
		t.Fatal(err)
	}
	after, _, _ := readPair(p.path("admin"))
	if !before.Equal(after) {
		t.Error("a second issue replaced the admin certificate")
	}
}
