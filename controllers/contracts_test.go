package controllers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// api/v1 MapConfig and internal/mapgen.Config are one JSON document written
// twice: mapgen builds for js/wasm and may not import Kubernetes types, so
// it keeps its own copy. The operator writes the document into
// ROOMKEEPER_MAP_CONFIG and the welcome message; mapgen reads it. These
// tests fail when the two drift: a field added, renamed or retyped on one
// side, or a bound the CRD checks that mapgen does not.

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name      string
	omitEmpty bool
	typ       reflect.Type
}

func jsonFields(t reflect.Type) map[string]jsonField {
	fields := map[string]jsonField{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = jsonField{name: name, omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"), typ: f.Type}
	}
	return fields
}

// compareJSONShapes reports every difference between the JSON that a and b
// encode to and decode from, at path.
func compareJSONShapes(path string, a, b reflect.Type) []string {
	if a.Kind() != b.Kind() {
		return []string{fmt.Sprintf("%s: %s in api/v1, %s in mapgen", path, a, b)}
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array, reflect.Pointer:
		return compareJSONShapes(path+"[]", a.Elem(), b.Elem())
	case reflect.Map:
		return append(compareJSONShapes(path+"{key}", a.Key(), b.Key()), compareJSONShapes(path+"{}", a.Elem(), b.Elem())...)
	case reflect.Struct:
		var diffs []string
		fa, fb := jsonFields(a), jsonFields(b)
		for name, f := range fa {
			g, ok := fb[name]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: in api/v1 %s, missing from mapgen %s", path, name, a.Name(), b.Name()))
				continue
			}
			if f.omitEmpty != g.omitEmpty {
				diffs = append(diffs, fmt.Sprintf("%s.%s: omitempty %t in api/v1, %t in mapgen", path, name, f.omitEmpty, g.omitEmpty))
			}
			diffs = append(diffs, compareJSONShapes(path+"."+name, f.typ, g.typ)...)
		}
		for name := range fb {
			if _, ok := fa[name]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: in mapgen %s, missing from api/v1 %s", path, name, b.Name(), a.Name()))
			}
		}
		return diffs
	}
	return nil // same basic kind (a named string such as Biome is a string)
}

func TestMapConfigAndMapgenConfigHaveOneJSONShape(t *testing.T) {
	diffs := compareJSONShapes("config", reflect.TypeFor[gamev1.MapConfig](), reflect.TypeFor[mapgen.Config]())
	slices.Sort(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

// fullMapConfig sets every field, so the round trip covers all of them.
func fullMapConfig() gamev1.MapConfig {
	return gamev1.MapConfig{Seed: -7, Width: 300, Height: 200, Biome: gamev1.BiomeDungeon, NPCDensity: 0.25, LootDensity: 0.125,
		Portals: []gamev1.Portal{{To: "crypt", X: 299, Y: 1}, {To: "town-2", X: 5, Y: 199}}, SpawnPoints: 9, PlayerSpeed: 60, Content: "crypt"}
}

// TestMapConfigRoundTripsThroughMapgen writes a MapConfig as the operator
// does, parses it with mapgen, writes mapgen's config back and reads it as
// a MapConfig again: nothing may be lost or changed on the way.
func TestMapConfigRoundTripsThroughMapgen(t *testing.T) {
	in := fullMapConfig()
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullMapConfig leaves %s unset: set it so the round trip covers it", v.Type().Field(i).Name)
		}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := mapgen.ParseConfig(raw)
	if err != nil {
		t.Fatalf("mapgen refuses the operator's MapConfig %s: %v", raw, err)
	}
	back, err := json.Marshal(parsed)
	if err != nil {
		t.Fatal(err)
	}
	var out gamev1.MapConfig
	if err := json.Unmarshal(back, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("after api/v1 -> mapgen -> api/v1:\n got %+v\nwant %+v", out, in)
	}
	if string(raw) != string(back) {
		t.Errorf("the two sides write different JSON:\napi/v1 %s\nmapgen %s", raw, back)
	}
}

// configSchema is the CRD's OpenAPI schema of spec.maps[].config, as
// controller-gen generated it from api/v1's markers.
func configSchema(t *testing.T) map[string]any {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "game.roomkeeper.dev_gamerooms.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	versions := dig(t, crd, "spec", "versions").([]any)
	return dig(t, versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "maps",
		"items", "properties", "config").(map[string]any)
}

func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var cur any = m
	for _, p := range path {
		next, ok := cur.(map[string]any)[p]
		if !ok {
			t.Fatalf("the CRD has no %s (looking for %s)", p, strings.Join(path, "."))
		}
		cur = next
	}
	return cur
}

// TestMapgenValidatesLikeTheCRD: every config the CRD's bounds and enums
// accept, mapgen accepts (else a map pod would crash on a spec the API
// server took), and mapgen refuses just past each bound (its own checks
// protect configs that never passed the API server).
func TestMapgenValidatesLikeTheCRD(t *testing.T) {
	schema := configSchema(t)
	props := dig(t, schema, "properties").(map[string]any)
	if got, want := keys(props), keys(jsonFields(reflect.TypeFor[mapgen.Config]())); !slices.Equal(got, want) {
		t.Errorf("the CRD's config has fields %v, mapgen.Config %v", got, want)
	}
	try := func(name string, edit func(m map[string]any), ok bool) {
		t.Helper()
		raw, _ := json.Marshal(fullMapConfig())
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		edit(m)
		raw, _ = json.Marshal(m)
		_, err := mapgen.ParseConfig(raw)
		if ok && err != nil {
			t.Errorf("%s: the CRD accepts %s, mapgen refuses it: %v", name, raw, err)
		}
		if !ok && err == nil {
			t.Errorf("%s: the CRD refuses %s, mapgen accepts it", name, raw)
		}
	}
	number := func(field, bound string) float64 { return toFloat(t, dig(t, props, field, bound)) }

	for _, biome := range dig(t, props, "biome", "enum").([]any) {
		try("biome "+biome.(string), func(m map[string]any) { m["biome"] = biome }, true)
	}
	try("an unknown biome", func(m map[string]any) { m["biome"] = "swamp" }, false)
	for _, field := range []string{"width", "height"} {
		lo, hi := number(field, "minimum"), number(field, "maximum")
		try(field+" at its minimum", func(m map[string]any) { m[field] = lo; m["portals"] = nil }, true)
		try(field+" at its maximum", func(m map[string]any) { m[field] = hi }, true)
		try(field+" below its minimum", func(m map[string]any) { m[field] = lo - 1; m["portals"] = nil }, false)
		try(field+" above its maximum", func(m map[string]any) { m[field] = hi + 1 }, false)
	}
	// The smallest step past a bound: 1 for integers, 0.01 for fractions.
	for _, f := range []struct {
		field string
		step  float64
	}{{"spawnPoints", 1}, {"playerSpeed", 1}, {"npcDensity", 0.01}, {"lootDensity", 0.01}} {
		lo, hi := number(f.field, "minimum"), number(f.field, "maximum")
		try(f.field+" at its minimum", func(m map[string]any) { m[f.field] = lo }, true)
		try(f.field+" at its maximum", func(m map[string]any) { m[f.field] = hi }, true)
		try(f.field+" below its minimum", func(m map[string]any) { m[f.field] = lo - f.step }, false)
		try(f.field+" above its maximum", func(m map[string]any) { m[f.field] = hi + f.step }, false)
	}
	portals := func(n int, to string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"to": to, "x": 1, "y": 1}
		}
		return out
	}
	maxPortals := int(number("portals", "maxItems"))
	try("the most portals", func(m map[string]any) { m["portals"] = portals(maxPortals, "crypt") }, true)
	try("too many portals", func(m map[string]any) { m["portals"] = portals(maxPortals+1, "crypt") }, false)
	to := dig(t, props, "portals", "items", "properties", "to").(map[string]any)
	maxLen := int(toFloat(t, to["maxLength"]))
	try("the longest portal target", func(m map[string]any) { m["portals"] = portals(1, strings.Repeat("a", maxLen)) }, true)
	try("a too long portal target", func(m map[string]any) { m["portals"] = portals(1, strings.Repeat("a", maxLen+1)) }, false)
	if got := to["pattern"]; got != "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" {
		t.Errorf("the CRD's portal target pattern is %v: make mapgen's validMapName check the same and update this test", got)
	}
	try("a portal target with capitals", func(m map[string]any) { m["portals"] = portals(1, "Crypt") }, false)
	try("a portal target ending in -", func(m map[string]any) { m["portals"] = portals(1, "crypt-") }, false)
}

// toFloat is a number of the CRD, which YAML decodes as int64 or float64.
func toFloat(t *testing.T, v any) float64 {
	t.Helper()
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}

// keys are m's keys in order.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
