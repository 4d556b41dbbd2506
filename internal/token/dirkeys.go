package token

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// dataDir is the symlink the kubelet points at the current timestamped copy
// of a mounted Secret; it swaps it with one rename when the Secret changes.
const dataDir = "..data"

// DefaultWatchInterval is the polling interval Watch uses when given none.
// The kubelet itself takes up to a minute to project a changed Secret, so
// polling every few seconds adds little to a rotation's delay.
const DefaultWatchInterval = 5 * time.Second

// keyFiles are the files a key directory may hold.
var keyFiles = []string{FileCurrentKID, FileCurrentKey, FilePreviousKID, FilePreviousKey}

// DirKeys is a KeySource read from a directory holding the files
// FileCurrentKID, FileCurrentKey, FilePreviousKID and FilePreviousKey: the
// room's key Secret mounted into a map pod. It is safe for concurrent use.
type DirKeys struct {
	dir  string
	keys atomic.Pointer[KeySet]
	// reloading serialises Reload so that a slow read that started first
	// cannot store older keys over those of a later one.
	reloading sync.Mutex
}

// LoadDir reads the key set in dir. It fails when the current key is missing
// or short, or when the previous key is half there.
func LoadDir(dir string) (*DirKeys, error) {
	d := &DirKeys{dir: dir}
	if err := d.Reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Keys returns the key set as last loaded.
func (d *DirKeys) Keys() KeySet {
	return *d.keys.Load()
}

// Reload re-reads the directory now. A read that fails or finds a broken key
// set keeps the old keys and returns the error, so a half-written Secret never
// leaves the pod unable to verify.
func (d *DirKeys) Reload() error {
	d.reloading.Lock()
	defer d.reloading.Unlock()
	data, err := readKeyFiles(d.dir)
	if err != nil {
		return err
	}
	ks, err := KeySetFromData(data)
	if err != nil {
		return fmt.Errorf("loading keys from %s: %w", d.dir, err)
	}
	d.keys.Store(&ks)
	return nil
}

// Watch reloads every interval until ctx is done, calling onError (when not
// nil) for each failed reload; the old keys stay in use. It blocks, so run it
// in its own goroutine. Polling is deliberate: the kubelet updates a Secret
// volume by swapping the ..data symlink, which inotify watches on the files
// do not follow. A non-positive interval means DefaultWatchInterval.
func (d *DirKeys) Watch(ctx context.Context, interval time.Duration, onError func(error)) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := d.Reload(); err != nil && onError != nil {
				onError(err)
			}
		}
	}
}

// readAttempts bounds how often readKeyFiles starts over because the kubelet
// swapped ..data during a read; each swap is a whole Secret update, so more
// than one in a row is already rare.
const readAttempts = 5

// readKeyFiles reads the key files of dir. In a kubelet-mounted volume it
// reads them from the directory ..data points to, so that all four files come
// from the same version. The kubelet deletes the old version's directory
// right after it swaps ..data, so a read that raced a swap may have found
// some files gone, and a current key without its previous one is a valid
// set: the read counts only if ..data still points where it did before.
// Missing files are left out of the result.
func readKeyFiles(dir string) (map[string][]byte, error) {
	for attempt := 1; ; attempt++ {
		base, err := resolveDataDir(dir)
		if err != nil {
			return nil, err
		}
		data, err := readKeyFilesIn(base)
		if err != nil {
			return nil, err
		}
		after, err := resolveDataDir(dir)
		if err != nil {
			return nil, err
		}
		if after == base {
			return data, nil
		}
		if attempt == readAttempts {
			return nil, fmt.Errorf("reading keys from %s: %s changed during each of %d reads", dir, dataDir, readAttempts)
		}
	}
}

// readKeyFilesIn reads the key files in base, leaving out missing ones.
func readKeyFilesIn(base string) (map[string][]byte, error) {
	data := make(map[string][]byte, len(keyFiles))
	for _, name := range keyFiles {
		b, err := os.ReadFile(filepath.Join(base, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading key file: %w", err)
		}
		data[name] = b
	}
	return data, nil
}

// resolveDataDir returns the directory ..data points to, or dir itself when
// it is a plain directory (not a kubelet mount).
func resolveDataDir(dir string) (string, error) {
	target, err := filepath.EvalSymlinks(filepath.Join(dir, dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dataDir, err)
	}
	return target, nil
}
