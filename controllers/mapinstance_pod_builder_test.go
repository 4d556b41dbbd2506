package controllers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

func TestBuildPod(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withDatabase("roomkeeper-db", "dsn"))
	room.Spec.PodTemplate = gamev1.PodTemplate{
		Labels:       map[string]string{"team": "core", gamev1.LabelRoom: "spoofed"},
		Annotations:  map[string]string{"note": "x"},
		NodeSelector: map[string]string{"pool": "game"},
		Tolerations:  []corev1.Toleration{{Key: "game", Operator: corev1.TolerationOpExists}},
		Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	}
	mi := newMapInstance(room, "town")

	pod, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL})
	if err != nil {
		t.Fatal(err)
	}

	if pod.Name != "demo-town" || pod.Namespace != "default" {
		t.Errorf("pod is %s/%s, want default/demo-town", pod.Namespace, pod.Name)
	}
	if ref := pod.OwnerReferences; len(ref) != 1 || ref[0].Kind != "MapInstance" || ref[0].Name != mi.Name || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("owner references = %+v, want the MapInstance as controller", ref)
	}
	wantLabels := map[string]string{gamev1.LabelRoom: "demo", gamev1.LabelMap: "town", "team": "core", labelManagedBy: managedBy}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if pod.Annotations["note"] != "x" || pod.Annotations[gamev1.AnnotationInputHash] == "" {
		t.Errorf("annotations = %v, want the template's and the input hash", pod.Annotations)
	}
	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s, want Never: the operator counts restarts", spec.RestartPolicy)
	}
	if spec.ServiceAccountName != RoomServerServiceAccount {
		t.Errorf("serviceAccountName = %s", spec.ServiceAccountName)
	}
	if spec.NodeSelector["pool"] != "game" || len(spec.Tolerations) != 1 {
		t.Errorf("scheduling from the template is missing: %v %v", spec.NodeSelector, spec.Tolerations)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != "demo-token-keys" {
		t.Errorf("volumes = %+v, want the key Secret", spec.Volumes)
	}

	c := spec.Containers[0]
	if c.Image != room.Spec.Image || c.Resources.Limits.Cpu().String() != "1" {
		t.Errorf("container image/resources = %s %v", c.Image, c.Resources)
	}
	for _, arg := range []string{"--room=demo", "--map=town", "--instance=demo-town", "--tick-rate=30",
		"--snapshot-rate=10", "--max-players=100", "--checkpoint-interval=5s", "--token-ttl=10s", "--shutdown-grace=45s", "--key-dir=" + keyMountPath,
		"--join-api=" + testJoinAPIURL} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	var config gamev1.MapConfig
	if err := json.Unmarshal([]byte(env[podenv.EnvMapConfig].Value), &config); err != nil || config.Seed != 42 || config.Width != 256 {
		t.Errorf("%s = %q (%v), want the map config as JSON", podenv.EnvMapConfig, env[podenv.EnvMapConfig].Value, err)
	}
	if ref := env[podenv.EnvDatabaseURL].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "roomkeeper-db" || ref.SecretKeyRef.Key != "dsn" {
		t.Errorf("%s = %+v, want the room's database Secret", podenv.EnvDatabaseURL, env[podenv.EnvDatabaseURL])
	}
	for _, name := range []string{podenv.EnvPodName, podenv.EnvPodNamespace, podenv.EnvPodIP} {
		if env[name].ValueFrom == nil || env[name].ValueFrom.FieldRef == nil {
			t.Errorf("%s is not from the downward API", name)
		}
	}
	if len(c.Ports) != 2 || c.Ports[0].ContainerPort != podenv.GamePort || c.Ports[1].ContainerPort != podenv.HTTPPort {
		t.Errorf("ports = %+v", c.Ports)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes = %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != keyMountPath {
		t.Errorf("volume mounts = %+v, want the keys read-only", c.VolumeMounts)
	}
}

// testJoinAPIURL is the join API's URL the tests build pods with.
const testJoinAPIURL = "http://roomkeeper-join-api.roomkeeper-system.svc:8090"

func TestBuildPodWithoutJoinAPIURLHasNoFlag(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	pod, err := BuildPod(newMapInstance(room, "town"), room, PodSettings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range pod.Spec.Containers[0].Args {
		if strings.HasPrefix(arg, "--join-api") {
			t.Fatalf("args have %s without a join API URL", arg)
		}
	}
}

func TestBuildPodBrowserOrigins(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	mi := newMapInstance(room, "town")
	without, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL})
	if err != nil {
		t.Fatal(err)
	}
	with, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL, BrowserOrigins: []string{"https://play.example.com", "http://127.0.0.1:8090"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(without.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--allowed-origins") }) {
		t.Errorf("args without origins: %q", without.Spec.Containers[0].Args)
	}
	if want := "--allowed-origins=https://play.example.com,http://127.0.0.1:8090"; !slices.Contains(with.Spec.Containers[0].Args, want) {
		t.Errorf("args %q lack %s", with.Spec.Containers[0].Args, want)
	}
	// A pod of other origins is out of date: its page could not connect.
	if with.Annotations[gamev1.AnnotationInputHash] == without.Annotations[gamev1.AnnotationInputHash] {
		t.Error("the origins do not change the pod's input hash")
	}
}

func TestBuildPodWithoutDatabaseHasNoDSN(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	pod, err := BuildPod(newMapInstance(room, "town"), room, PodSettings{JoinAPIURL: testJoinAPIURL})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == podenv.EnvDatabaseURL {
			t.Fatalf("%s set without a database", podenv.EnvDatabaseURL)
		}
	}
}

func TestInputHash(t *testing.T) {
	hashWith := func(room *gamev1.GameRoom, joinAPIURL string) string {
		t.Helper()
		pod, err := BuildPod(newMapInstance(room, "town"), room, PodSettings{JoinAPIURL: joinAPIURL})
		if err != nil {
			t.Fatal(err)
		}
		return pod.Annotations[gamev1.AnnotationInputHash]
	}
	hashOf := func(room *gamev1.GameRoom) string {
		t.Helper()
		return hashWith(room, testJoinAPIURL)
	}
	base := hashOf(newGameRoom("demo", withMap("town")))
	if again := hashOf(newGameRoom("demo", withMap("town"))); again != base {
		t.Errorf("equal inputs hash differently: %s vs %s", base, again)
	}
	changes := map[string]*gamev1.GameRoom{
		"image":    newGameRoom("demo", withMap("town"), withImage("roomkeeper/roomserver:v2")),
		"database": newGameRoom("demo", withMap("town"), withDatabase("db", "dsn")),
		"tickRate": func() *gamev1.GameRoom {
			r := newGameRoom("demo", withMap("town"))
			r.Spec.TickRate = 60
			return r
		}(),
		"map seed": func() *gamev1.GameRoom {
			r := newGameRoom("demo", withMap("town"))
			r.Spec.Maps[0].Config.Seed = 7
			return r
		}(),
	}
	for name, room := range changes {
		if hashOf(room) == base {
			t.Errorf("changing %s keeps the hash: the pod would not be replaced", name)
		}
	}
	if hashWith(newGameRoom("demo", withMap("town")), "http://127.0.0.1:8090") == base {
		t.Error("changing the join API URL keeps the hash: the pods would keep asking the old one")
	}
}

func TestEndpointFor(t *testing.T) {
	cases := map[string]string{
		"127.0.0.5": "ws://127.0.0.5:7350/ws",
		"fd00::5":   "ws://[fd00::5]:7350/ws",
	}
	for ip, want := range cases {
		if got := endpointFor(ip); got != want {
			t.Errorf("endpointFor(%s) = %s, want %s", ip, got, want)
		}
	}
}

func TestBuildMapInstance(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withDatabase("db", "dsn"))
	mi := buildShard(room, room.Spec.Maps[0], 1)
	if mi.Name != "demo-town" || mi.Spec != (gamev1.MapInstanceSpec{RoomName: "demo", MapName: "town"}) {
		t.Errorf("name %s, spec %+v: want demo-town naming the room's town", mi.Name, mi.Spec)
	}
	if mi.Labels[gamev1.LabelRoom] != "demo" || mi.Labels[gamev1.LabelMap] != "town" {
		t.Errorf("labels = %v", mi.Labels)
	}
	if len(mi.OwnerReferences) != 1 || mi.OwnerReferences[0].Kind != "GameRoom" {
		t.Errorf("owner references = %+v", mi.OwnerReferences)
	}
}

// TestPodsOutliveTheSlimmerMapInstance: MapInstances used to carry a copy
// of their room's settings, and the operator built pods from the copy. It
// now builds them from the room; the pod, and so its input hash, must be
// the very one an operator of that time built (the hash below), or an
// upgrade would restart every map. One change since was on purpose: the
// 60 s grace period and --shutdown-grace=45s (a drain that evicts the
// manager too leaves a handover more time), which replaces every map pod
// once, by handover, when the operator is upgraded (docs/install.md); the
// hash pins the pod as built since, before the pods' POD_UID (their
// Leases), which is a legacy form: such pods run on.
func TestPodsOutliveTheSlimmerMapInstance(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withDatabase("db", "dsn"))
	room.Spec.Exposure = gamev1.Exposure{Type: gamev1.ExposureHostPort}
	room.Spec.PodTemplate = gamev1.PodTemplate{Labels: map[string]string{"team": "red"}, Annotations: map[string]string{"a": "b"},
		NodeSelector: map[string]string{"pool": "game"}, Tolerations: []corev1.Toleration{{Key: "game", Operator: corev1.TolerationOpExists}}}
	room.Spec.Maps[0].Config.Seed = 42
	mi := newMapInstance(room, "town")
	mi.Status.HostPort = 7001
	pod, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL, BrowserOrigins: []string{"https://play.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	const builtFromTheCopy = "21fc496b7a3a8313" // BuildPod at 3712a15 ("1b224e287b7f32d1"), with the 60 s grace
	running := pod.DeepCopy()
	running.Annotations[gamev1.AnnotationInputHash] = builtFromTheCopy
	if podOutdated(running, pod) {
		t.Errorf("a pod built before (input hash %s) is outdated against today's (%s): the pods of existing maps would be replaced",
			builtFromTheCopy, pod.Annotations[gamev1.AnnotationInputHash])
	}
	running.Spec.Containers[0].Image = "another"
	running.Annotations[gamev1.AnnotationInputHash] = "0000000000000000"
	if !podOutdated(running, pod) {
		t.Error("a pod of other inputs is current")
	}
}

func TestBuildPodOfAMapTheRoomDoesNotHave(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	mi := newMapInstance(room, "town")
	mi.Spec.MapName = "forest"
	if _, err := BuildPod(mi, room, PodSettings{}); err == nil || !strings.Contains(err.Error(), "no map forest") {
		t.Errorf("err = %v, want one naming the missing map", err)
	}
}

// TestAPartyInstanceSeatsTheParty: an instanced map's pod admits the
// room's parties.maxSize players (10 unless set), no more than
// maxPlayersPerMap; a shared map's admits maxPlayersPerMap.
func TestAPartyInstanceSeatsTheParty(t *testing.T) {
	for _, tc := range []struct {
		maxSize, maxPlayers int32
		want                string
	}{
		{0, 100, "--max-players=10"},
		{4, 100, "--max-players=4"},
		{50, 20, "--max-players=20"},
	} {
		room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"))
		room.Spec.Parties.MaxSize, room.Spec.MaxPlayersPerMap = tc.maxSize, tc.maxPlayers
		for mapName, want := range map[string]string{"crypt": tc.want, "town": fmt.Sprint("--max-players=", tc.maxPlayers)} {
			pod, err := BuildPod(newMapInstance(room, mapName), room, PodSettings{})
			if err != nil {
				t.Fatal(err)
			}
			if args := pod.Spec.Containers[0].Args; !slices.Contains(args, want) {
				t.Errorf("maxSize %d, maxPlayersPerMap %d: the %s pod's args %v lack %s", tc.maxSize, tc.maxPlayers, mapName, args, want)
			}
		}
	}
}

// TestAHeartbeatTimeoutOfTheRoomsOwnSetsThePodsInterval: pods beat every
// third of their room's heartbeat timeout; a room on the default (set or
// not) passes no flag, so its pods keep their input hash, and one of its
// own has pods of another hash (they are replaced to beat at the new pace).
func TestAHeartbeatTimeoutOfTheRoomsOwnSetsThePodsInterval(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	unset, asDefault := buildWithTimeout(t, room, nil), buildWithTimeout(t, room, &metav1.Duration{Duration: gamev1.DefaultHeartbeatTimeout})
	long := buildWithTimeout(t, room, &metav1.Duration{Duration: time.Minute})
	for _, pod := range []*corev1.Pod{unset, asDefault} {
		if v, ok := podenv.ArgValue(pod.Spec.Containers[0].Args, podenv.FlagHeartbeatInterval); ok {
			t.Errorf("a room on the default timeout passes --%s=%s", podenv.FlagHeartbeatInterval, v)
		}
	}
	if unset.Annotations[gamev1.AnnotationInputHash] != asDefault.Annotations[gamev1.AnnotationInputHash] {
		t.Error("the default timeout, set, changes the pod's input hash")
	}
	if v, _ := podenv.ArgValue(long.Spec.Containers[0].Args, podenv.FlagHeartbeatInterval); v != "20s" {
		t.Errorf("a 1m timeout gives --%s=%q, want 20s", podenv.FlagHeartbeatInterval, v)
	}
	if long.Annotations[gamev1.AnnotationInputHash] == unset.Annotations[gamev1.AnnotationInputHash] {
		t.Error("the timeout does not change the pod's input hash")
	}
}

// TestAPodIsGivenThreeOfItsOwnIntervals: the operator waits for a pod's
// heartbeat the longer of the policy's timeout and three of the intervals
// the pod was started with, so shortening a room's timeout fails no pod
// that beats as it was told.
func TestAPodIsGivenThreeOfItsOwnIntervals(t *testing.T) {
	minute := gamev1.RestartPolicy{HeartbeatTimeout: &metav1.Duration{Duration: time.Minute}}
	room := newGameRoom("demo", withMap("town"))
	slow := buildWithTimeout(t, room, minute.HeartbeatTimeout)
	for _, tc := range []struct {
		name   string
		policy gamev1.RestartPolicy
		pod    *corev1.Pod
		want   time.Duration
	}{
		{"no pod", gamev1.RestartPolicy{}, nil, gamev1.DefaultHeartbeatTimeout},
		{"a pod of the default pace", gamev1.RestartPolicy{}, buildWithTimeout(t, room, nil), gamev1.DefaultHeartbeatTimeout},
		{"a pod of the room's pace", minute, slow, time.Minute},
		{"the timeout shortened since the pod started", gamev1.RestartPolicy{}, slow, time.Minute},
		{"the timeout lengthened since", gamev1.RestartPolicy{HeartbeatTimeout: &metav1.Duration{Duration: 2 * time.Minute}}, slow, 2 * time.Minute},
	} {
		if got := heartbeatTimeoutFor(&tc.policy, tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// build is room's pod of its town with the heartbeat timeout given.
func buildWithTimeout(t *testing.T, room *gamev1.GameRoom, timeout *metav1.Duration) *corev1.Pod {
	t.Helper()
	room = room.DeepCopy()
	room.Spec.RestartPolicy.HeartbeatTimeout = timeout
	pod, err := BuildPod(newMapInstance(room, "town"), room, PodSettings{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
