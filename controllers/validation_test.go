package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// validRoom is a GameRoom manifest the CRD accepts; each case breaks one thing.
func validRoom(ns string) map[string]any {
	return map[string]any{
		"apiVersion": "game.roomkeeper.dev/v1",
		"kind":       "GameRoom",
		"metadata":   map[string]any{"name": "demo", "namespace": ns},
		"spec": map[string]any{
			"image":      "roomkeeper/roomserver:dev",
			"defaultMap": "town",
			"maps": []any{
				map[string]any{"name": "town", "config": map[string]any{"seed": int64(42), "width": int64(512), "height": int64(512),
					"portals": []any{map[string]any{"to": "crypt", "x": int64(500), "y": int64(256)}}}},
				map[string]any{"name": "crypt", "instanced": true, "config": map[string]any{"width": int64(256), "height": int64(256)}},
			},
		},
	}
}

func TestGameRoomSchemaRefusesInvalidSpecs(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	cases := []struct {
		name   string
		mutate func(room map[string]any)
		want   []string // all must appear in the error
	}{
		{"defaultMap names no map", func(r map[string]any) { spec(r)["defaultMap"] = "castle" },
			[]string{"spec.defaultMap", "defaultMap must name one of maps"}},
		{"defaultMap is instanced", func(r map[string]any) { spec(r)["defaultMap"] = "crypt" },
			[]string{"spec.defaultMap", "must not be an instanced map"}},
		{"duplicate map names", func(r map[string]any) { maps(r)[1].(map[string]any)["name"] = "town" },
			[]string{"spec.maps[1]", "Duplicate value"}},
		{"map name not a DNS label", func(r map[string]any) { maps(r)[1].(map[string]any)["name"] = "Crypt_1" },
			[]string{"spec.maps[1].name"}},
		{"map name too long", func(r map[string]any) { maps(r)[1].(map[string]any)["name"] = strings.Repeat("a", 21) },
			[]string{"spec.maps[1].name", "20"}},
		{"no maps", func(r map[string]any) { spec(r)["maps"] = []any{} }, []string{"spec.maps"}},
		{"snapshotRate above tickRate", func(r map[string]any) { spec(r)["tickRate"] = int64(20); spec(r)["snapshotRate"] = int64(30) },
			[]string{"spec.snapshotRate", "snapshotRate must not exceed tickRate"}},
		{"tickRate too low", func(r map[string]any) { spec(r)["tickRate"] = int64(5) }, []string{"spec.tickRate"}},
		{"tickRate too high", func(r map[string]any) { spec(r)["tickRate"] = int64(500) }, []string{"spec.tickRate"}},
		{"image empty", func(r map[string]any) { spec(r)["image"] = "" }, []string{"spec.image"}},
		{"checkpointInterval zero", func(r map[string]any) { spec(r)["checkpointInterval"] = "0s" },
			[]string{"spec.checkpointInterval", "must be positive"}},
		{"checkpointInterval negative", func(r map[string]any) { spec(r)["checkpointInterval"] = "-5s" },
			[]string{"spec.checkpointInterval"}},
		{"checkpointInterval not a duration", func(r map[string]any) { spec(r)["checkpointInterval"] = "soon" },
			[]string{"spec.checkpointInterval"}},
		{"idleTimeout zero", func(r map[string]any) { spec(r)["idleTimeout"] = "0s" }, []string{"spec.idleTimeout"}},
		{"exposure type unknown", func(r map[string]any) { spec(r)["exposure"] = map[string]any{"type": "LoadBalancer"} },
			[]string{"spec.exposure.type", "Direct", "HostPort", "Gateway"}},
		{"Gateway exposure without a gateway", func(r map[string]any) { spec(r)["exposure"] = map[string]any{"type": "Gateway"} },
			[]string{"spec.exposure.gateway", "required when type is Gateway"}},
		{"a gateway with another exposure", func(r map[string]any) {
			spec(r)["exposure"] = map[string]any{"type": "HostPort", "gateway": map[string]any{"name": "public", "hostname": "games.example.com"}}
		}, []string{"spec.exposure.gateway", "only to type Gateway"}},
		{"gateway hostname not a DNS name", func(r map[string]any) {
			spec(r)["exposure"] = map[string]any{"type": "Gateway", "gateway": map[string]any{"name": "public", "hostname": "*.Example.com"}}
		}, []string{"spec.exposure.gateway.hostname"}},
		{"gateway without a hostname", func(r map[string]any) {
			spec(r)["exposure"] = map[string]any{"type": "Gateway", "gateway": map[string]any{"name": "public"}}
		}, []string{"spec.exposure.gateway.hostname", "Required"}},
		{"gateway port out of range", func(r map[string]any) {
			spec(r)["exposure"] = map[string]any{"type": "Gateway", "gateway": map[string]any{"name": "public", "hostname": "games.example.com", "port": int64(70000)}}
		}, []string{"spec.exposure.gateway.port"}},
		{"maxRestarts zero", func(r map[string]any) { spec(r)["restartPolicy"] = map[string]any{"maxRestarts": int64(0)} },
			[]string{"spec.restartPolicy.maxRestarts"}},
		{"window zero", func(r map[string]any) { spec(r)["restartPolicy"] = map[string]any{"window": "0s"} },
			[]string{"spec.restartPolicy.window"}},
		{"quarantine zero", func(r map[string]any) { spec(r)["restartPolicy"] = map[string]any{"quarantine": "0m"} },
			[]string{"spec.restartPolicy.quarantine"}},
		{"initialBackoff above maxBackoff", func(r map[string]any) {
			spec(r)["restartPolicy"] = map[string]any{"initialBackoff": "1m", "maxBackoff": "10s"}
		}, []string{"spec.restartPolicy.initialBackoff", "initialBackoff must not exceed maxBackoff"}},
		{"heartbeatTimeout under 10s", func(r map[string]any) { spec(r)["restartPolicy"] = map[string]any{"heartbeatTimeout": "5s"} },
			[]string{"spec.restartPolicy.heartbeatTimeout", "between 10s and 10m"}},
		{"heartbeatTimeout over 10m", func(r map[string]any) { spec(r)["restartPolicy"] = map[string]any{"heartbeatTimeout": "1h"} },
			[]string{"spec.restartPolicy.heartbeatTimeout"}},
		{"no party instances", func(r map[string]any) { spec(r)["parties"] = map[string]any{"maxInstancesPerMap": int64(0)} },
			[]string{"spec.parties.maxInstancesPerMap"}},
		{"too many party instances", func(r map[string]any) { spec(r)["parties"] = map[string]any{"maxInstancesPerMap": int64(5000)} },
			[]string{"spec.parties.maxInstancesPerMap"}},
		{"party size zero", func(r map[string]any) { spec(r)["parties"] = map[string]any{"maxSize": int64(0)} },
			[]string{"spec.parties.maxSize"}},
		{"party size over 100", func(r map[string]any) { spec(r)["parties"] = map[string]any{"maxSize": int64(101)} },
			[]string{"spec.parties.maxSize"}},
		{"a warm pool of a shared map", func(r map[string]any) { firstMap(r)["warm"] = int64(2) },
			[]string{"spec.maps[0].warm", "instanced"}},
		{"a warm pool over 50", func(r map[string]any) { firstMap(r)["warm"] = int64(51) }, []string{"spec.maps[0].warm"}},
		{"shards of an instanced map", func(r map[string]any) { maps(r)[1].(map[string]any)["shards"] = map[string]any{"max": int64(2)} },
			[]string{"spec.maps[1].shards", "shards are for shared maps"}},
		{"shards min above max", func(r map[string]any) { firstMap(r)["shards"] = map[string]any{"min": int64(3), "max": int64(2)} },
			[]string{"spec.maps[0].shards.min", "must not exceed shards.max"}},
		{"shards max over 20", func(r map[string]any) { firstMap(r)["shards"] = map[string]any{"max": int64(21)} },
			[]string{"spec.maps[0].shards.max"}},
		{"shards min 0", func(r map[string]any) { firstMap(r)["shards"] = map[string]any{"min": int64(0), "max": int64(2)} },
			[]string{"spec.maps[0].shards.min"}},
		{"a map named like a sharded map's shard", func(r map[string]any) {
			firstMap(r)["shards"] = map[string]any{"max": int64(2)}
			maps(r)[1].(map[string]any)["name"] = "town-s2"
			portal(r)["to"] = "town-s2"
		}, []string{"spec.maps", "shards are named <room>-<map>-s<n>"}},
		{"token ttl zero", func(r map[string]any) { spec(r)["tokens"] = map[string]any{"ttl": "0s"} }, []string{"spec.tokens.ttl"}},
		{"token ttl under a second", func(r map[string]any) { spec(r)["tokens"] = map[string]any{"ttl": "500ms"} }, []string{"spec.tokens.ttl", "between 1s and 5m"}},
		{"rotation shorter than ttl", func(r map[string]any) { spec(r)["tokens"] = map[string]any{"ttl": "1m", "rotationInterval": "30s"} },
			[]string{"spec.tokens.rotationInterval", "longer than ttl"}},
		{"portal to unknown map", func(r map[string]any) { portal(r)["to"] = "castle" }, []string{"spec.maps", "every portal's to must name one of maps"}},
		{"portal outside the map", func(r map[string]any) { portal(r)["x"] = int64(600) },
			[]string{"spec.maps[0].config.portals", "inside the map"}},
		{"width too small", func(r map[string]any) { config(r)["width"] = int64(8) }, []string{"spec.maps[0].config.width"}},
		{"npcDensity above 1", func(r map[string]any) { config(r)["npcDensity"] = 1.5 }, []string{"spec.maps[0].config.npcDensity"}},
		{"unknown biome", func(r map[string]any) { config(r)["biome"] = "lava" }, []string{"spec.maps[0].config.biome"}},
		{"content pack that is no name", func(r map[string]any) { config(r)["content"] = "Zoo Pack" }, []string{"spec.maps[0].config.content"}},
		{"content as an object", func(r map[string]any) { config(r)["content"] = map[string]any{"name": "crypt"} },
			[]string{"spec.maps[0].config.content"}},
		{"maxPlayersPerMap zero", func(r map[string]any) { spec(r)["maxPlayersPerMap"] = int64(0) }, []string{"spec.maxPlayersPerMap"}},
		{"room name too long", func(r map[string]any) {
			r["metadata"].(map[string]any)["name"] = strings.Repeat("r", 37)
		}, []string{"metadata.name must be at most 36 characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			room := validRoom(ns)
			tc.mutate(room)
			err := k8s.Create(ctx, &unstructured.Unstructured{Object: room})
			if err == nil {
				t.Fatal("the invalid GameRoom was accepted")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestGameRoomSchemaAcceptsAndDefaults(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	if err := k8s.Create(ctx, &unstructured.Unstructured{Object: validRoom(ns)}); err != nil {
		t.Fatalf("the valid GameRoom was refused: %v", err)
	}
	room := &gamev1.GameRoom{}
	if err := k8s.Get(ctx, key(ns, "demo"), room); err != nil {
		t.Fatal(err)
	}
	s := room.Spec
	if s.TickRate != 30 || s.SnapshotRate != 10 || s.MaxPlayersPerMap != 100 || s.CheckpointInterval.Duration.String() != "5s" ||
		s.IdleTimeout != nil || s.RestartPolicy.MaxRestarts != 3 || s.RestartPolicy.MaxBackoff.Duration.String() != "30s" ||
		s.Tokens.TTL.Duration.String() != "10s" || s.Tokens.RotationInterval.Duration.String() != "24h0m0s" || s.Maps[1].Config.Biome != gamev1.BiomeMeadow ||
		s.RestartPolicy.HeartbeatTimeout.Duration.String() != "15s" || s.Parties.MaxInstancesPerMap != 100 {
		t.Errorf("defaults not applied: %+v", s)
	}
}

func TestMapInstanceNamesAreImmutable(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	room := newGameRoom("demo", withMap("town"))
	mi := newMapInstance(room, "town")
	mi.Namespace, mi.UID, mi.OwnerReferences, mi.Generation = ns, "", nil, 0
	if err := k8s.Create(ctx, mi); err != nil {
		t.Fatal(err)
	}
	for field, change := range map[string]func(*gamev1.MapInstance){
		"spec.roomName": func(m *gamev1.MapInstance) { m.Spec.RoomName = "other" },
		"spec.mapName":  func(m *gamev1.MapInstance) { m.Spec.MapName = "other" },
	} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := &gamev1.MapInstance{}
			if err := k8s.Get(ctx, key(ns, mi.Name), current); err != nil {
				return err
			}
			change(current)
			return k8s.Update(ctx, current)
		})
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("changing %s: error %v, want it refused as immutable", field, err)
		}
	}
}

func spec(room map[string]any) map[string]any { return room["spec"].(map[string]any) }
func maps(room map[string]any) []any          { return spec(room)["maps"].([]any) }
func config(room map[string]any) map[string]any {
	return maps(room)[0].(map[string]any)["config"].(map[string]any)
}
func firstMap(room map[string]any) map[string]any { return maps(room)[0].(map[string]any) }
func portal(room map[string]any) map[string]any {
	return config(room)["portals"].([]any)[0].(map[string]any)
}
