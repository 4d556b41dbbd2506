package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// errUnsupported marks a pod the agent can never run; it is reported Failed
// instead of being retried.
var errUnsupported = errors.New("unsupported by localnode")

// resolveImage maps an image to a local binary: by the exact reference first,
// then by its name without tag or digest.
func resolveImage(images map[string]string, image string) (string, error) {
	if path, ok := images[image]; ok {
		return path, nil
	}
	if path, ok := images[imageName(image)]; ok {
		return path, nil
	}
	return "", fmt.Errorf("%w: image %q is not in --image-map", errUnsupported, image)
}

// imageName strips the digest and tag from an image reference.
func imageName(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name
}

// checkRunnable rejects pods whose shape the agent cannot honour.
func checkRunnable(pod *corev1.Pod) error {
	switch {
	case len(pod.Spec.Containers) != 1:
		return fmt.Errorf("%w: pods must have exactly one container, this one has %d", errUnsupported, len(pod.Spec.Containers))
	case len(pod.Spec.InitContainers) > 0:
		return fmt.Errorf("%w: init containers", errUnsupported)
	case len(pod.Spec.Containers[0].Command) > 0:
		return fmt.Errorf("%w: container command (the mapped binary is the entrypoint; use args)", errUnsupported)
	case len(pod.Spec.Containers[0].EnvFrom) > 0:
		return fmt.Errorf("%w: envFrom", errUnsupported)
	}
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.HostPort != 0 && p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			return fmt.Errorf("%w: hostPort %d/%s (only TCP host ports are forwarded)", errUnsupported, p.HostPort, p.Protocol)
		}
	}
	return nil
}

// rewriteArgs adapts container args to the host: a volume mount path at the
// start of an argument or of a flag value becomes the local directory
// (mounts maps mount path to directory), and a `=:PORT` listen flag binds
// to the pod's address.
func rewriteArgs(args []string, mounts map[string]string, podIP string) []string {
	paths := make([]string, 0, len(mounts))
	for p := range mounts {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	out := make([]string, len(args))
	for i, arg := range args {
		for _, p := range paths {
			if rewritten, ok := replacePathPrefix(arg, p, mounts[p]); ok {
				arg = rewritten
				break
			}
		}
		out[i] = bindListen(arg, podIP)
	}
	return out
}

// replacePathPrefix replaces from with to when from is the whole of arg, its
// leading path, or the leading path of its `=` value.
func replacePathPrefix(arg, from, to string) (string, bool) {
	from = strings.TrimSuffix(from, "/")
	if from == "" {
		return arg, false
	}
	head, value := "", arg
	if flag, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
		head, value = flag+"=", v
	}
	if value != from && !strings.HasPrefix(value, from+"/") {
		return arg, false
	}
	return head + to + value[len(from):], true
}

// bindListen turns `--flag=:PORT` into `--flag=IP:PORT`.
func bindListen(arg, ip string) string {
	flag, value, ok := strings.Cut(arg, "=")
	port, isPort := strings.CutPrefix(value, ":")
	if !ok || !isPort || !strings.HasPrefix(flag, "-") || port == "" || strings.Trim(port, "0123456789") != "" {
		return arg
	}
	return flag + "=" + net.JoinHostPort(ip, port)
}

// secretGetter reads the Secrets and ConfigMaps env and volumes refer to:
// from the agent's watch of them, as a kubelet's watch-based manager does
// (a volume refreshed every few seconds costs the API server nothing), and
// from the API server when the watch has not seen one yet (a Secret made
// just before its pod).
type secretGetter struct {
	client     kubernetes.Interface
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	namespace  string
}

func (g secretGetter) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	if s, err := g.secrets.Secrets(g.namespace).Get(name); err == nil {
		return s, nil
	}
	return g.client.CoreV1().Secrets(g.namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g secretGetter) configMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if cm, err := g.configMaps.ConfigMaps(g.namespace).Get(name); err == nil {
		return cm, nil
	}
	return g.client.CoreV1().ConfigMaps(g.namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g secretGetter) secretKey(ctx context.Context, sel *corev1.SecretKeySelector) (string, bool, error) {
	s, err := g.secret(ctx, sel.Name)
	if err != nil {
		return "", false, fmt.Errorf("reading Secret %s: %w", sel.Name, err)
	}
	v, ok := s.Data[sel.Key]
	return string(v), ok, nil
}

func (g secretGetter) configMapKey(ctx context.Context, sel *corev1.ConfigMapKeySelector) (string, bool, error) {
	cm, err := g.configMap(ctx, sel.Name)
	if err != nil {
		return "", false, fmt.Errorf("reading ConfigMap %s: %w", sel.Name, err)
	}
	v, ok := cm.Data[sel.Key]
	return v, ok, nil
}

// podAddrs are the addresses the downward API tells a pod.
type podAddrs struct {
	podIP, hostIP string
}

// buildEnv is the process environment: base (PATH, the pod's credentials),
// then the container's env in order (later entries win).
func buildEnv(ctx context.Context, g secretGetter, pod *corev1.Pod, base []string, addrs podAddrs) ([]string, error) {
	env := slices.Clone(base)
	for _, e := range pod.Spec.Containers[0].Env {
		value, skip, err := envValue(ctx, g, pod, e, addrs)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			env = append(env, e.Name+"="+value)
		}
	}
	return env, nil
}

// envValue resolves one env entry. skip is set for a missing optional key.
func envValue(ctx context.Context, g secretGetter, pod *corev1.Pod, e corev1.EnvVar, addrs podAddrs) (value string, skip bool, err error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return e.Value, false, nil
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath, addrs)
		return v, false, err
	case from.SecretKeyRef != nil:
		v, ok, err := g.secretKey(ctx, from.SecretKeyRef)
		return keyValue(v, ok, err, from.SecretKeyRef.Key, from.SecretKeyRef.Optional)
	case from.ConfigMapKeyRef != nil:
		v, ok, err := g.configMapKey(ctx, from.ConfigMapKeyRef)
		return keyValue(v, ok, err, from.ConfigMapKeyRef.Key, from.ConfigMapKeyRef.Optional)
	default:
		return "", false, fmt.Errorf("%w: this kind of valueFrom", errUnsupported)
	}
}

// keyValue applies the optional flag to a key lookup.
func keyValue(v string, ok bool, err error, key string, optional *bool) (string, bool, error) {
	isOptional := optional != nil && *optional
	switch {
	case err != nil && isOptional:
		return "", true, nil
	case err != nil:
		return "", false, err
	case !ok && isOptional:
		return "", true, nil
	case !ok:
		return "", false, fmt.Errorf("no key %q", key)
	}
	return v, false, nil
}

// fieldValue is a downward-API field of the pod.
func fieldValue(pod *corev1.Pod, path string, addrs podAddrs) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return addrs.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return addrs.hostIP, nil
	}
	return "", fmt.Errorf("%w: fieldRef %q", errUnsupported, path)
}

// process is one started pod process.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process is reaped
	code   int32         // the exit code, valid after exited
}

// startProcess runs binary in its own process group at the nice value nice,
// in cgroup, with output appended to logPath, and reaps it in the
// background.
func startProcess(binary string, args, env []string, dir, logPath string, nice int, cgroup podCgroup) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := cgroup.enter(niced(nice, append([]string{binary}, args...)))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(binary), err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.code = exitCodeOf(cmd.ProcessState)
		_ = logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// niced is argv run at the nice value nice: nice(1) sets the value and
// executes the command in its place, so every thread the process starts
// has it (Linux keeps a nice value per thread, and a new thread takes its
// creator's).
func niced(nice int, argv []string) []string {
	if nice == 0 {
		return argv
	}
	return append([]string{"nice", "-n", strconv.Itoa(nice), "--"}, argv...)
}

// signal sends sig to the process group.
func (p *process) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}
