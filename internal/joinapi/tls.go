package joinapi

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// certReloader serves the certificate in certFile and keyFile and reads
// them again when either changes on disk, so that a rotated certificate
// (cert-manager rewriting a mounted Secret) is used without a restart.
type certReloader struct {
	certFile, keyFile string
	log               logr.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	modified time.Time
	// refused is the files' modification time when they last failed to
	// load: they are not read again, nor the failure logged again, until
	// they change (a handshake costs a stat, not a parse).
	refused time.Time
}

// newCertReloader loads the pair once, so that a bad pair fails at start.
func newCertReloader(certFile, keyFile string, log logr.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if _, err := r.certificate(); err != nil {
		return nil, err
	}
	return r, nil
}

// certificate returns the pair, reloaded when a file is newer than the
// last load. A pair that no longer loads keeps the previous one, logged
// once.
func (r *certReloader) certificate() (*tls.Certificate, error) {
	newest, err := newestModTime(r.certFile, r.keyFile)
	if err != nil && r.cert == nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && (!newest.After(r.modified) || newest.Equal(r.refused)) {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			r.refused = newest
			r.log.Error(err, "The join API's new TLS certificate does not load; serving the previous one until the files change",
				"cert", r.certFile, "key", r.keyFile)
			return r.cert, nil
		}
		return nil, fmt.Errorf("join API TLS: %w", err)
	}
	r.cert, r.modified = &cert, newest
	return r.cert, nil
}

func newestModTime(paths ...string) (time.Time, error) {
	var newest time.Time
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return time.Time{}, fmt.Errorf("join API TLS: %w", err)
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	return newest, nil
}

// tlsConfig serves the reloader's certificate, TLS 1.2 at least.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.certificate()
		},
	}
}
