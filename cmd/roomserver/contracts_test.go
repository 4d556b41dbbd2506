package main

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The operator starts the room server in a pod it builds
// (controllers.BuildPod); these tests hold that pod and this command to
// one contract: every flag and variable the pod sets is one the room server
// reads, everything the room server needs is set, and the probes and the
// endpoint point at paths the room server serves.

const contractJoinAPI = "http://roomkeeper-join-api.roomkeeper-system.svc:8090"

// contractOrigins are the browser origins the operator passes on.
var contractOrigins = []string{"https://play.example.com", "http://127.0.0.1:8090"}

// contractRoom is a room whose settings all differ from the room server's
// defaults, so a flag the room server ignored would show.
func contractRoom() *gamev1.GameRoom {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	return &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "games", UID: "room-uid"},
		Spec: gamev1.GameRoomSpec{
			Image:      "roomkeeper/roomserver:dev",
			DefaultMap: "town",
			Maps: []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 42, Width: 64, Height: 64,
				Biome: gamev1.BiomeForest, Portals: []gamev1.Portal{{To: "crypt", X: 3, Y: 60}}}}},
			RoomSettings: gamev1.RoomSettings{
				TickRate: 20, SnapshotRate: 5, MaxPlayersPerMap: 42,
				CheckpointInterval: d(3 * time.Second),
				Database:           &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "roomkeeper-db", Key: "dsn"}, MaxConnectionsPerPod: 7},
				Tokens:             gamev1.TokenPolicy{TTL: d(7 * time.Second), RotationInterval: d(time.Hour)},
			},
		},
	}
}

// operatorPod is the pod the operator builds for the room's town map.
func operatorPod(t *testing.T, room *gamev1.GameRoom, settings controllers.PodSettings) (*gamev1.MapInstance, corev1.Container) {
	t.Helper()
	mi := gamev1.NewMapInstance(room, room.Spec.Maps[0], gamev1.MapInstanceName(room.Name, room.Spec.Maps[0].Name))
	pod, err := controllers.BuildPod(mi, room, settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("the pod has %d containers, want the room server alone", len(pod.Spec.Containers))
	}
	return mi, pod.Spec.Containers[0]
}

// podEnvironment is the container's environment as the kubelet would give
// it: literal values, and a stand-in for each value from elsewhere
// (downward API, Secret).
func podEnvironment(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "from-" + strings.ToLower(e.Name)
		}
	}
	return env
}

// TestOperatorPodMatchesRoomServerFlags parses the operator's pod with the
// room server's own flag parsing: it must succeed, read every variable the
// pod sets, set every variable it reads, and carry the room's settings.
func TestOperatorPodMatchesRoomServerFlags(t *testing.T) {
	room := contractRoom()
	mi, c := operatorPod(t, room, controllers.PodSettings{JoinAPIURL: contractJoinAPI, BrowserOrigins: contractOrigins})
	env := podEnvironment(c)
	var read []string
	o, err := parseFlags(c.Args, func(name string) string { read = append(read, name); return env[name] })
	if err != nil {
		t.Fatalf("the room server refuses the operator's pod (args %q): %v", c.Args, err)
	}

	for name := range env {
		if !slices.Contains(read, name) {
			t.Errorf("the pod sets %s, which the room server never reads", name)
		}
	}
	for _, name := range read {
		if _, ok := env[name]; !ok {
			t.Errorf("the room server reads %s, which the pod does not set", name)
		}
	}

	s := room.Spec
	got := map[string]any{
		"room": o.cfg.Room, "map": o.cfg.Map, "instance": o.cfg.Instance,
		"tick rate": o.cfg.TickRate, "snapshot rate": o.cfg.SnapshotRate, "max players": o.cfg.MaxPlayers,
		"checkpoint interval": o.cfg.CheckpointInterval, "token ttl": o.cfg.TokenTTL,
		"join API": o.joinAPI, "map config": string(o.cfg.MapConfig), "pod": o.cfg.Pod, "namespace": o.namespace,
		"database": o.databaseURL, "origins": strings.Join(o.cfg.AllowedOrigins, " "),
		"database connections": o.databaseMaxConns,
	}
	want := map[string]any{
		"room": mi.Spec.RoomName, "map": mi.Spec.MapName, "instance": mi.Name,
		"tick rate": int(s.TickRate), "snapshot rate": int(s.SnapshotRate), "max players": int(s.MaxPlayersPerMap),
		"checkpoint interval": s.CheckpointInterval.Duration, "token ttl": s.Tokens.TTL.Duration,
		"join API": contractJoinAPI, "map config": env[podenv.EnvMapConfig], "pod": env[podenv.EnvPodName],
		"namespace": env[podenv.EnvPodNamespace], "database": env[podenv.EnvDatabaseURL],
		"origins":              strings.Join(contractOrigins, " "),
		"database connections": int(s.Database.MaxConnectionsPerPod),
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("%s: the room server reads %v, the operator meant %v", k, got[k], want[k])
		}
	}
	if o.pprof {
		t.Error("the operator's pod turns pprof on")
	}

	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == o.keyDir })
	if !mounted {
		t.Errorf("--key-dir=%s is not where the pod mounts a volume (%+v)", o.keyDir, c.VolumeMounts)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, l := range []struct{ flag, addr string }{{podenv.FlagListen, o.listen}, {podenv.FlagHTTPListen, o.httpListen}} {
		_, port, err := net.SplitHostPort(l.addr)
		if err != nil {
			t.Errorf("--%s=%s: %v", l.flag, l.addr, err)
			continue
		}
		if !slices.Contains([]string{strconv.Itoa(int(ports["game"])), strconv.Itoa(int(ports["http"]))}, port) {
			t.Errorf("--%s listens on port %s, which the pod does not declare (%v)", l.flag, port, ports)
		}
	}
	if want := strconv.Itoa(int(ports["game"])); !strings.HasSuffix(o.listen, ":"+want) {
		t.Errorf("the game listens at %s, the pod's game port is %s", o.listen, want)
	}
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || ports[probe.HTTPGet.Port.StrVal] == 0 ||
			!strings.HasSuffix(o.httpListen, ":"+strconv.Itoa(int(ports[probe.HTTPGet.Port.StrVal]))) {
			t.Errorf("probe %+v does not reach the room server's --%s=%s", probe, podenv.FlagHTTPListen, o.httpListen)
		}
	}
}

// TestOperatorPodWithoutOptionalInputs: a room without a database and a
// manager without a join API give a pod the room server still starts on.
func TestOperatorPodWithoutOptionalInputs(t *testing.T) {
	room := contractRoom()
	room.Spec.Database = nil
	_, c := operatorPod(t, room, controllers.PodSettings{})
	env := podEnvironment(c)
	o, err := parseFlags(c.Args, func(name string) string { return env[name] })
	if err != nil {
		t.Fatalf("the room server refuses the operator's pod (args %q): %v", c.Args, err)
	}
	if o.databaseURL != "" || o.joinAPI != "" {
		t.Errorf("database %q, join API %q: want neither", o.databaseURL, o.joinAPI)
	}
}

// TestOperatorPodProbesAreServed starts the room server on the operator's
// pod (addresses and key directory moved to the test's) and requests each
// probe's path, and the path of the endpoint the operator publishes.
func TestOperatorPodProbesAreServed(t *testing.T) {
	room := contractRoom()
	room.Spec.Database = nil // no Postgres here: guests only
	_, c := operatorPod(t, room, controllers.PodSettings{})
	f := newFixture(t)
	var env []string
	for name, value := range podEnvironment(c) {
		env = append(env, name+"="+value)
	}
	args := append(slices.Clone(c.Args), "--key-dir="+f.keyDir, "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0")
	p := f.run(args, env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		url := "http://" + p.http + probe.HTTPGet.Path
		for code := 0; code != http.StatusOK; {
			if ctx.Err() != nil {
				t.Fatalf("GET %s (a probe of the operator's pod) = %d, want 200", url, code)
			}
			code, _ = get(t, ctx, url)
		}
	}
	if code, _ := get(t, ctx, "http://"+p.http+podenv.MetricsPath); code != http.StatusOK {
		t.Errorf("GET %s = %d, want 200", podenv.MetricsPath, code)
	}
	endpoint := "ws://" + p.game + podenv.GamePath
	conn, err := client.Dial(ctx, endpoint, protocol.Hello{Ticket: f.ticket("c")}, client.Options{})
	if err != nil {
		t.Fatalf("joining at %s (the operator's endpoint path): %v", endpoint, err)
	}
	_ = conn.Close()
}
