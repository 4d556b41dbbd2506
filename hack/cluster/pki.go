package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The cluster's PKI: one CA signs every serving and client certificate,
// as kubeadm lays it out, written once into the state directory and
// reused by every later `up` (a restarted cluster keeps its identities).

// certLife is how long the cluster's certificates are valid: a local
// cluster lives days, not years.
const certLife = 90 * 24 * time.Hour

// identity is one certificate the PKI issues.
type identity struct {
	// name is the files' base name: <name>.crt, <name>.key.
	name string
	// commonName and organizations are the subject; the API server reads
	// them as the user and its groups.
	commonName    string
	organizations []string
	// server makes it a serving certificate for these names and
	// addresses; otherwise it is a client certificate.
	server    bool
	dnsNames  []string
	addresses []net.IP
}

// pki is the CA in a directory.
type pki struct {
	dir    string
	ca     *x509.Certificate
	key    crypto.Signer
	serial int64
}

// loadOrCreatePKI reads the CA in dir, making one if there is none.
func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir, serial: time.Now().UnixNano()}
	crt, key, err := readPair(filepath.Join(dir, "ca"))
	switch {
	case err == nil:
		p.ca, p.key = crt, key
		return p, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.nextSerial()), Subject: pkix.Name{CommonName: "roomkeeper-cluster-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLife), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.key = key
	return p, writePair(filepath.Join(dir, "ca"), der, key)
}

func (p *pki) nextSerial() int64 {
	p.serial++
	return p.serial
}

// issue writes id's certificate and key, unless they exist.
func (p *pki) issue(id identity) error {
	base := filepath.Join(p.dir, id.name)
	if _, _, err := readPair(base); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.nextSerial()),
		Subject:      pkix.Name{CommonName: id.commonName, Organization: id.organizations},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(certLife), BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if id.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = id.dnsNames, id.addresses
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.key)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", id.name, err)
	}
	return writePair(base, der, key)
}

// serviceAccountKey writes the key pair the API server signs
// ServiceAccount tokens with (sa.key, sa.pub), unless it exists.
func (p *pki) serviceAccountKey() error {
	if _, err := os.Stat(filepath.Join(p.dir, "sa.key")); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(p.dir, "sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
		return err
	}
	return writePEM(filepath.Join(p.dir, "sa.key"), "PRIVATE KEY", priv, 0o600)
}

// kubeconfig writes a kubeconfig for the client identity id against the
// API server at server.
func (p *pki) kubeconfig(path, server string, id identity) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["roomkeeper-cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p.path("ca.crt")}
	kc.AuthInfos[id.commonName] = &clientcmdapi.AuthInfo{ClientCertificate: p.path(id.name + ".crt"), ClientKey: p.path(id.name + ".key")}
	kc.Contexts["roomkeeper-cluster"] = &clientcmdapi.Context{Cluster: "roomkeeper-cluster", AuthInfo: id.commonName}
	kc.CurrentContext = "roomkeeper-cluster"
	return clientcmd.WriteToFile(*kc, path)
}

// path is a file of the PKI's directory.
func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func writePair(base string, der []byte, key crypto.Signer) error {
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(base+".key", "PRIVATE KEY", priv, 0o600); err != nil {
		return err
	}
	return writePEM(base+".crt", "CERTIFICATE", der, 0o644)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readPair reads base.crt and base.key; os.ErrNotExist when either is
// missing.
func readPair(base string) (*x509.Certificate, crypto.Signer, error) {
	crtPEM, err := os.ReadFile(base + ".crt")
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, nil, err
	}
	crtBlock, keyBlock := decodePEM(crtPEM), decodePEM(keyPEM)
	if crtBlock == nil || keyBlock == nil {
		return nil, nil, fmt.Errorf("%s: not PEM", base)
	}
	crt, err := x509.ParseCertificate(crtBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s.key: not a signing key", base)
	}
	return crt, signer, nil
}

func decodePEM(data []byte) *pem.Block {
	block, _ := pem.Decode(data)
	return block
}
