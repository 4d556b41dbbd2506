package token

import (
	"github.com/roomkeeper/roomkeeper/internal/wait"

	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// secretVolume lays out a directory the way the kubelet projects a Secret:
// the data in a timestamped directory, a ..data symlink to it, and one
// top-level symlink per key through ..data. An update writes a new
// timestamped directory and renames a fresh symlink over ..data, which is the
// one atomic step readers can observe.
type secretVolume struct {
	t       *testing.T
	dir     string
	version int
	current string
}

func newSecretVolume(t *testing.T, data map[string][]byte) *secretVolume {
	t.Helper()
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.swap(data)
	return v
}

// swap projects data as the new version of the Secret.
func (v *secretVolume) swap(data map[string][]byte) {
	v.t.Helper()
	v.version++
	ts := fmt.Sprintf("..2026_03_01_12_00_%02d.%d", v.version, 1000+v.version)
	v.must(os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	for name, b := range data {
		v.must(os.WriteFile(filepath.Join(v.dir, ts, name), b, 0o400))
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	v.must(os.Symlink(ts, tmp))
	v.must(os.Rename(tmp, filepath.Join(v.dir, dataDir)))
	for name := range data {
		link := filepath.Join(v.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			v.must(os.Symlink(filepath.Join(dataDir, name), link))
		}
	}
	if v.current != "" {
		v.must(os.RemoveAll(filepath.Join(v.dir, v.current)))
	}
	v.current = ts
}

func (v *secretVolume) must(err error) {
	v.t.Helper()
	if err != nil {
		v.t.Fatal(err)
	}
}

func sameKeys(a, b KeySet) bool {
	if a.Current.ID != b.Current.ID || !bytes.Equal(a.Current.Secret, b.Current.Secret) {
		return false
	}
	if a.Previous == nil || b.Previous == nil {
		return a.Previous == b.Previous
	}
	return a.Previous.ID == b.Previous.ID && bytes.Equal(a.Previous.Secret, b.Previous.Secret)
}

// withoutCurrentKey is ks's data with current.key missing, as a Secret
// edited by hand might be.
func withoutCurrentKey(ks KeySet) map[string][]byte {
	data := ks.Data()
	delete(data, FileCurrentKey)
	return data
}

func TestDirKeysReloadFollowsSymlinkSwap(t *testing.T) {
	ks := newKeySet(t)
	vol := newSecretVolume(t, ks.Data())
	d, err := LoadDir(vol.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !sameKeys(d.Keys(), ks) {
		t.Fatalf("loaded %v, want %v", d.Keys(), ks)
	}

	rotated, err := Rotate(ks)
	if err != nil {
		t.Fatal(err)
	}
	vol.swap(rotated.Data())
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if !sameKeys(d.Keys(), rotated) {
		t.Fatalf("after the swap: %v, want %v", d.Keys(), rotated)
	}

	vol.swap(withoutCurrentKey(ks))
	if err := d.Reload(); err == nil {
		t.Fatal("reloading a key set without current.key succeeded")
	}
	if !sameKeys(d.Keys(), rotated) {
		t.Fatalf("a broken reload replaced the keys: %v, want %v", d.Keys(), rotated)
	}
}

func TestLoadDirPlainDirectory(t *testing.T) {
	ks := newKeySet(t)
	dir := t.TempDir()
	for name, b := range ks.Data() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !sameKeys(d.Keys(), ks) {
		t.Fatalf("loaded %v, want %v", d.Keys(), ks)
	}
}

func TestLoadDirRefusesBrokenKeys(t *testing.T) {
	ks := newKeySet(t)
	short := ks.Data()
	short[FileCurrentKey] = []byte("short")
	cases := map[string]string{
		"missing directory": filepath.Join(t.TempDir(), "nope"),
		"empty directory":   t.TempDir(),
		"no current.key":    newSecretVolume(t, withoutCurrentKey(ks)).dir,
		"short current.key": newSecretVolume(t, short).dir,
	}
	for name, dir := range cases {
		if _, err := LoadDir(dir); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestDirKeysWatch(t *testing.T) {
	ks := newKeySet(t)
	vol := newSecretVolume(t, ks.Data())
	d, err := LoadDir(vol.dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, time.Millisecond, func(err error) {
			select {
			case errs <- err:
			default: // one reported error is all the test needs
			}
		})
	}()
	defer func() { cancel(); <-done }()

	rotated, err := Rotate(ks)
	if err != nil {
		t.Fatal(err)
	}
	vol.swap(rotated.Data())
	waitFor(t, 10*time.Second, "Watch to load the rotated keys", func() bool {
		return sameKeys(d.Keys(), rotated)
	})

	drainErrors(errs) // only an error after the broken swap counts
	vol.swap(withoutCurrentKey(rotated))
	select {
	case err := <-errs:
		t.Logf("Watch reported: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Watch reported no error for a key set without current.key")
	}
	if !sameKeys(d.Keys(), rotated) {
		t.Fatalf("a broken reload replaced the keys: %v", d.Keys())
	}
}

// drainErrors empties errs without waiting.
func drainErrors(errs chan error) {
	for {
		select {
		case err := <-errs:
			_ = err // an error from before the broken swap is not the one under test
		default:
			return
		}
	}
}

// TestReloadNeverLoadsATornKeySet reloads while the volume swaps between two
// whole key sets, as the kubelet does, deleting each old version right after
// the swap. A reload that read a version while it was being deleted used to
// store the current key without the previous one: a valid set, but not one
// the Secret ever held, and tickets signed with the previous key failed.
func TestReloadNeverLoadsATornKeySet(t *testing.T) {
	ks := newKeySet(t)
	rotated, err := Rotate(ks)
	if err != nil {
		t.Fatal(err)
	}
	vol := newSecretVolume(t, ks.Data())
	d, err := LoadDir(vol.dir)
	if err != nil {
		t.Fatal(err)
	}
	const swaps = 300
	stop := make(chan struct{})
	torn := make(chan KeySet, 1)
	reloads := make(chan int, 1)
	go func() {
		n := 0
		defer func() { reloads <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if d.Reload() != nil {
				continue // a reload may fail during a swap; it keeps the old keys
			}
			n++
			if got := d.Keys(); !sameKeys(got, ks) && !sameKeys(got, rotated) {
				torn <- got
				return
			}
		}
	}()
	for i := range swaps {
		if i%2 == 0 {
			vol.swap(rotated.Data())
		} else {
			vol.swap(ks.Data())
		}
	}
	close(stop)
	n := <-reloads
	select {
	case got := <-torn:
		t.Fatalf("a reload during a swap loaded a key set the Secret never held: %v", got)
	default:
	}
	if n == 0 {
		t.Fatal("no reload succeeded during the swaps")
	}
	t.Logf("%d reloads during %d swaps, each a whole key set", n, swaps)
}

// waitFor polls cond until it holds or the deadline passes: the test waits
// exactly as long as the condition takes, never a fixed sleep.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait.Eventually(t, timeout, what, wait.True(cond, "not yet"))
}
