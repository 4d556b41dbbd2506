package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/packs"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// The room-server container as the operator builds it. Its contract with
// cmd/roomserver (flags, environment, ports and paths) is internal/podenv.
const (
	roomServerContainer = "roomserver"
	gamePortName        = "game"
	httpPortName        = "http"
	keyMountPath        = "/var/run/roomkeeper/keys"
	keyVolume           = "token-keys"
	contentMountPath    = "/var/run/roomkeeper/content"
	contentVolume       = "content"

	// annotationContent and annotationContentRevision name the GameContent
	// a map pod runs and the ConfigMap of its revision: the revision's
	// ConfigMap stays while a pod mounts it (the cached pods keep no spec).
	annotationContent         = "game.roomkeeper.dev/content"
	annotationContentRevision = "game.roomkeeper.dev/content-revision"

	// terminationGrace is how long a map pod has after SIGTERM to hand its
	// players over (waiting for the operator to start a successor, which
	// after a drain that evicted the manager too can take a while) or say
	// goodbye to them, and checkpoint: shutdownGrace, which the room
	// server is given, and a margin for the process to exit.
	terminationGrace = 60
	shutdownGrace    = 45 * time.Second
)

// RoomServerServiceAccount is the ServiceAccount every map pod runs as, one
// per namespace, with the Role and RoleBinding of the same name.
const RoomServerServiceAccount = "roomkeeper-roomserver"

// legacyServiceAccount is the per-room ServiceAccount map pods ran as
// before the namespace's one; such pods keep running (podOutdated) and the
// room removes the per-room RBAC once none is left (gameroom_rbac.go).
func legacyServiceAccount(room string) string {
	return room + "-roomserver"
}

// endpointFor is the WebSocket URL players use to reach a pod at ip.
func endpointFor(ip string) string {
	return "ws://" + net.JoinHostPort(ip, strconv.Itoa(podenv.GamePort)) + podenv.GamePath
}

// hostPortOf is the node port the map's pod asks for: the one its status
// holds under exposure HostPort, else none.
func hostPortOf(mi *gamev1.MapInstance, room *gamev1.GameRoom) int32 {
	if room.Spec.Exposure.Type != gamev1.ExposureHostPort {
		return 0
	}
	return mi.Status.HostPort
}

// PodSettings are what the manager's flags add to every map pod.
type PodSettings struct {
	// JoinAPIURL is how the pod reaches the manager's join API to ask
	// where portals lead; empty leaves the flag out.
	JoinAPIURL string
	// BrowserOrigins are the web origins whose pages may open the map's
	// WebSocket (the room server's --allowed-origins); none leaves the
	// flag out, and the room server takes same-origin pages only.
	BrowserOrigins []string
}

// MapContent is the GameContent revision a map pod runs; the zero value
// runs the built-in pack the map's config names.
type MapContent struct {
	// Name is the GameContent's, ConfigMap its valid revision's.
	Name, ConfigMap string
}

// BuildPod returns the room-server pod of a MapInstance of room with the
// manager's settings: the room's map of that name, image and settings, on
// a built-in content pack. It is exported for the room server's contract
// tests, which start the room server on what it builds.
func BuildPod(mi *gamev1.MapInstance, room *gamev1.GameRoom, settings PodSettings) (*corev1.Pod, error) {
	return BuildPodWith(mi, room, settings, MapContent{})
}

// BuildPodWith is BuildPod running pack. It is a pure function of its
// arguments: the input-hash annotation covers everything it read, so a
// different hash (another pack revision too) means the running pod is out
// of date.
func BuildPodWith(mi *gamev1.MapInstance, room *gamev1.GameRoom, settings PodSettings, pack MapContent) (*corev1.Pod, error) {
	m, ok := room.Spec.Map(mi.Spec.MapName)
	if !ok {
		return nil, fmt.Errorf("room %s has no map %s", room.Name, mi.Spec.MapName)
	}
	config, err := json.Marshal(m.Config)
	if err != nil {
		return nil, fmt.Errorf("encoding map config: %w", err)
	}
	template := &room.Spec.PodTemplate
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            mi.Name,
			Namespace:       mi.Namespace,
			Labels:          podLabels(mi, template),
			Annotations:     copyMap(template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(mi, gamev1.GroupVersion.WithKind("MapInstance"))},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            RoomServerServiceAccount,
			TerminationGracePeriodSeconds: ptr.To[int64](terminationGrace),
			NodeSelector:                  copyMap(template.NodeSelector),
			Tolerations:                   template.DeepCopy().Tolerations,
			Containers:                    []corev1.Container{roomServerContainerFor(mi, room, string(config), settings)},
			Volumes: []corev1.Volume{{
				Name: keyVolume,
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: keySecretName(room.Name),
				}},
			}},
		},
	}
	mountContent(pod, pack)
	hash, err := inputHash(pod)
	if err != nil {
		return nil, err
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[gamev1.AnnotationInputHash] = hash
	pod.Labels[labelPod] = podKey(pod.Name) // after the hash: a pod's name is not an input (a successor has another)
	return pod, nil
}

// mountContent gives the pod the pack's revision as a file, and says so
// in its annotations; a built-in pack needs nothing.
func mountContent(pod *corev1.Pod, pack MapContent) {
	if pack.ConfigMap == "" {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[annotationContent] = pack.Name
	pod.Annotations[annotationContentRevision] = pack.ConfigMap
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: contentVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: pack.ConfigMap}}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: contentVolume, MountPath: contentMountPath, ReadOnly: true})
	c.Args = append(c.Args, podenv.Arg(podenv.FlagContentFile, contentMountPath+"/"+packs.FileKey))
}

// contentOf is the pack revision pod runs, as mountContent recorded it
// (the zero MapContent for a built-in pack, or no pod).
func contentOf(pod *corev1.Pod) MapContent {
	if pod == nil {
		return MapContent{}
	}
	return MapContent{Name: pod.Annotations[annotationContent], ConfigMap: pod.Annotations[annotationContentRevision]}
}

// podLabels are the user's template labels under the operator's own, which win.
func podLabels(mi *gamev1.MapInstance, template *gamev1.PodTemplate) map[string]string {
	labels := copyMap(template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range mapLabels(mi.Spec.RoomName, mi.Spec.MapName, mi.Name) {
		labels[k] = v
	}
	return labels
}

func roomServerContainerFor(mi *gamev1.MapInstance, room *gamev1.GameRoom, config string, settings PodSettings) corev1.Container {
	s := &room.Spec
	args := []string{
		podenv.Arg(podenv.FlagRoom, mi.Spec.RoomName),
		podenv.Arg(podenv.FlagMap, mi.Spec.MapName),
		podenv.Arg(podenv.FlagInstance, mi.Name),
		podenv.Arg(podenv.FlagTickRate, strconv.Itoa(int(s.TickRate))),
		podenv.Arg(podenv.FlagSnapshotRate, strconv.Itoa(int(s.SnapshotRate))),
		podenv.Arg(podenv.FlagMaxPlayers, strconv.Itoa(int(s.Seats(mi.Spec.Instanced)))),
		podenv.Arg(podenv.FlagCheckpointInterval, durationOf(s.CheckpointInterval).String()),
		podenv.Arg(podenv.FlagTokenTTL, durationOf(s.Tokens.TTL).String()),
		podenv.Arg(podenv.FlagShutdownGrace, shutdownGrace.String()),
		podenv.Arg(podenv.FlagKeyDir, keyMountPath),
		podenv.Arg(podenv.FlagListen, ":"+strconv.Itoa(podenv.GamePort)),
		podenv.Arg(podenv.FlagHTTPListen, ":"+strconv.Itoa(podenv.HTTPPort)),
	}
	if settings.JoinAPIURL != "" {
		args = append(args, podenv.Arg(podenv.FlagJoinAPI, settings.JoinAPIURL))
	}
	if len(settings.BrowserOrigins) > 0 {
		args = append(args, podenv.Arg(podenv.FlagAllowedOrigins, strings.Join(settings.BrowserOrigins, ",")))
	}
	if db := s.Database; db != nil && db.MaxConnectionsPerPod > 0 {
		args = append(args, podenv.Arg(podenv.FlagDatabaseMaxConnections, strconv.Itoa(int(db.MaxConnectionsPerPod))))
	}
	// Only a timeout of the room's own changes the pods' arguments: the
	// default's interval is the pod's default, and pods of rooms that set
	// none keep their input hash.
	if p := s.RestartPolicy; p.HeartbeatTimeoutOrDefault() != gamev1.DefaultHeartbeatTimeout {
		args = append(args, podenv.Arg(podenv.FlagHeartbeatInterval, p.HeartbeatIntervalOrDefault().String()))
	}
	return corev1.Container{
		Name:  roomServerContainer,
		Image: s.Image,
		Args:  args,
		Env:   roomServerEnv(s.Database, config),
		Ports: []corev1.ContainerPort{
			{Name: gamePortName, ContainerPort: podenv.GamePort, HostPort: hostPortOf(mi, room), Protocol: corev1.ProtocolTCP},
			{Name: httpPortName, ContainerPort: podenv.HTTPPort, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: httpProbe(podenv.ReadyPath, 0, 2),
		LivenessProbe:  httpProbe(podenv.HealthPath, 5, 10),
		Resources:      *s.PodTemplate.Resources.DeepCopy(),
		VolumeMounts:   []corev1.VolumeMount{{Name: keyVolume, MountPath: keyMountPath, ReadOnly: true}},
		// The restricted Pod Security Standard, so a namespace that
		// enforces it runs rooms: non-root, no privilege escalation, no
		// capabilities, the runtime's seccomp profile; and a read-only root
		// filesystem (the server writes nothing to disk).
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

func roomServerEnv(database *gamev1.DatabaseRef, config string) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: podenv.EnvMapConfig, Value: config},
		fieldEnv(podenv.EnvPodName, "metadata.name"),
		fieldEnv(podenv.EnvPodUID, "metadata.uid"),
		fieldEnv(podenv.EnvPodNamespace, "metadata.namespace"),
		fieldEnv(podenv.EnvPodIP, "status.podIP"),
	}
	if database != nil {
		env = append(env, corev1.EnvVar{Name: podenv.EnvDatabaseURL, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: database.SecretRef.Name},
				Key:                  database.SecretRef.Key,
			},
		}})
	}
	return env
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: path},
	}}
}

func httpProbe(path string, initialDelay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(httpPortName),
		}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		FailureThreshold:    3,
	}
}

// inputHash hashes the built pod. JSON encoding sorts map keys, so the hash
// is stable for equal inputs.
func inputHash(pod *corev1.Pod) (string, error) {
	return hashJSON(struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Spec        corev1.PodSpec    `json:"spec"`
	}{pod.Labels, pod.Annotations, pod.Spec})
}

// hashJSON is a short hash of v's JSON encoding, the input-hash
// annotation of what the operator builds: pods, and the Services and
// HTTPRoutes of exposure Gateway.
func hashJSON(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing inputs: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8]), nil
}

// podOutdated tells whether pod was built from other inputs than desired.
// A pod that differs from desired only as an earlier operator built it
// (legacyForms, in any combination) is current: an operator upgrade does
// not restart every map.
func podOutdated(pod, desired *corev1.Pod) bool {
	have := pod.Annotations[gamev1.AnnotationInputHash]
	if have == desired.Annotations[gamev1.AnnotationInputHash] {
		return false
	}
	for forms := 1; forms < 1<<len(legacyForms); forms++ {
		legacy := desired.DeepCopy()
		delete(legacy.Annotations, gamev1.AnnotationInputHash)
		delete(legacy.Labels, labelPod)
		if len(legacy.Annotations) == 0 {
			legacy.Annotations = nil
		}
		for i, form := range legacyForms {
			if forms&(1<<i) != 0 {
				form(legacy, pod)
			}
		}
		if hash, err := inputHash(legacy); err == nil && hash == have {
			return false
		}
	}
	return true
}

// legacyForms turn a pod as BuildPod makes it now into one an earlier
// operator made from the same inputs, given the running pod.
var legacyForms = []func(legacy, running *corev1.Pod){
	// Before the namespace's shared ServiceAccount, each room had its own.
	func(legacy, running *corev1.Pod) {
		legacy.Spec.ServiceAccountName = legacyServiceAccount(running.Labels[gamev1.LabelRoom])
	},
	// Before the restricted Pod Security Standard: no seccomp profile of
	// its own, a writable root filesystem. Such a pod runs on until it is
	// replaced for another reason; its successor has them.
	func(legacy, _ *corev1.Pod) {
		for i := range legacy.Spec.Containers {
			if sc := legacy.Spec.Containers[i].SecurityContext; sc != nil {
				sc.SeccompProfile, sc.ReadOnlyRootFilesystem = nil, nil
			}
		}
	},
	// Before the pods' Leases: no POD_UID, so no Lease (the pod, and its
	// image, send status heartbeats only, which the operator still reads).
	func(legacy, _ *corev1.Pod) {
		for i := range legacy.Spec.Containers {
			c := &legacy.Spec.Containers[i]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == podenv.EnvPodUID })
		}
	},
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
