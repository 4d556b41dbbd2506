package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// writeVolumes materialises the pod's Secret, ConfigMap and emptyDir volumes
// under root, one directory per volume, and returns volume name -> directory.
// Other volume kinds are left out: their mounts are not rewritten (the
// ServiceAccount token a kubelet projects is written by mountCredentials
// instead). It is safe to call again to refresh.
func writeVolumes(ctx context.Context, g secretGetter, pod *corev1.Pod, root string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		files, ok, err := volumeFiles(ctx, g, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if !ok {
			continue
		}
		dir := filepath.Join(root, v.Name)
		if err := syncFiles(dir, files); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		dirs[v.Name] = dir
	}
	return dirs, nil
}

// volumeFiles is the content of a volume, relative path -> data; ok is false
// for volume kinds the agent does not materialise. An emptyDir has no files
// the agent manages (nil).
func volumeFiles(ctx context.Context, g secretGetter, v corev1.Volume) (map[string][]byte, bool, error) {
	switch {
	case v.Secret != nil:
		s, err := g.secret(ctx, v.Secret.SecretName)
		if optionalMissing(err, v.Secret.Optional) {
			return map[string][]byte{}, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		files, err := project(s.Data, v.Secret.Items)
		return files, true, err
	case v.ConfigMap != nil:
		cm, err := g.configMap(ctx, v.ConfigMap.Name)
		if optionalMissing(err, v.ConfigMap.Optional) {
			return map[string][]byte{}, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		data := map[string][]byte{}
		for k, val := range cm.Data {
			data[k] = []byte(val)
		}
		for k, val := range cm.BinaryData {
			data[k] = val
		}
		files, err := project(data, v.ConfigMap.Items)
		return files, true, err
	case v.EmptyDir != nil:
		return nil, true, nil
	}
	return nil, false, nil
}

func optionalMissing(err error, optional *bool) bool {
	return apierrors.IsNotFound(err) && optional != nil && *optional
}

// project picks and renames keys as a volume's items say; no items means
// every key under its own name.
func project(data map[string][]byte, items []corev1.KeyToPath) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	files := map[string][]byte{}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("no key %q", it.Key)
		}
		files[it.Path] = v
	}
	return files, nil
}

// syncFiles makes dir hold files: each written by rename when its content
// changed, and regular files no longer wanted removed. A nil files map only
// creates dir.
func syncFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if files == nil {
		return nil
	}
	for name, data := range files {
		if !filepath.IsLocal(name) {
			return fmt.Errorf("file %q escapes the volume", name)
		}
		if err := writeIfChanged(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return removeStale(dir, files)
}

// writeIfChanged replaces path with data unless it already holds it.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".localnode-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// removeStale deletes top-level regular files of dir that are not in files.
func removeStale(dir string, files map[string][]byte) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; keep || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// mountDirs maps each of the container's mount paths to its local directory.
func mountDirs(c corev1.Container, volumes map[string]string) map[string]string {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok || m.MountPath == "" {
			continue
		}
		if m.SubPath != "" && filepath.IsLocal(m.SubPath) {
			dir = filepath.Join(dir, m.SubPath)
		}
		mounts[m.MountPath] = dir
	}
	return mounts
}
