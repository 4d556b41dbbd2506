package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// The strict decoder's properties, over random documents and every client
// message type: it refuses exactly what encoding/json takes too loosely
// (keys in another case, duplicate keys, unknown fields) and otherwise
// decodes exactly what encoding/json decodes.

// plainDecode is encoding/json as the decoders used it before they were
// strict: unknown fields refused, case and duplicates let through.
func plainDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the value")
	}
	return nil
}

// strictDoc is the type the random documents are decoded into: struct,
// list, map, pointer, interface, raw and promoted fields, and names with
// the letters Unicode folds oddly (k and the Kelvin sign, s and the long s).
type strictDoc struct {
	A     int                 `json:"a"`
	Kind  string              `json:"kind"`
	Skill string              `json:"skill"`
	In    strictIn            `json:"in"`
	List  []strictIn          `json:"list"`
	Map   map[string]strictIn `json:"map"`
	Any   any                 `json:"any"`
	Raw   json.RawMessage     `json:"raw"`
	Ptr   *strictIn           `json:"ptr"`
	StrictEmbedded
}

type strictIn struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// StrictEmbedded's field is promoted into strictDoc as "e".
type StrictEmbedded struct {
	E int `json:"e"`
}

// docGen writes a random JSON document for strictDoc and remembers the
// first problem the strict decoder must report, in document order.
type docGen struct {
	r       *rand.Rand
	b       strings.Builder
	problem string // "path: message" of the first bad key; "" while none
}

// field is one JSON field of a struct in the generator's model.
type genField struct {
	name string
	kind string // "int", "string", "in", "list", "map", "any", "raw"
}

var (
	docFields = []genField{
		{"a", "int"}, {"kind", "string"}, {"skill", "string"}, {"in", "in"}, {"list", "list"},
		{"map", "map"}, {"any", "any"}, {"raw", "any"}, {"ptr", "in"}, {"e", "int"},
	}
	inFields = []genField{{"x", "int"}, {"y", "int"}}
)

func (g *docGen) fail(path, msg string) {
	if g.problem == "" {
		if path != "" {
			msg = path + ": " + msg
		}
		g.problem = msg
	}
}

// key writes a key, escaping some of its characters as \u00XX: the
// decoder must compare keys as encoding/json reads them.
func (g *docGen) key(k string) {
	g.b.WriteByte('"')
	for _, c := range k {
		if c < 0x80 && g.r.IntN(6) == 0 {
			fmt.Fprintf(&g.b, `\u%04x`, c)
			continue
		}
		g.b.WriteRune(c)
	}
	g.b.WriteString(`":`)
}

// otherCase is name in another case that encoding/json would still match:
// flipped ASCII letters, or k and s as the Kelvin and long-s signs.
func (g *docGen) otherCase(name string) string {
	for {
		var out strings.Builder
		for _, c := range name {
			switch {
			case c == 'k' && g.r.IntN(3) == 0:
				out.WriteRune('\u212a')
			case c == 's' && g.r.IntN(3) == 0:
				out.WriteRune('\u017f')
			case g.r.IntN(2) == 0:
				out.WriteRune(unicode.ToUpper(c))
			default:
				out.WriteRune(c)
			}
		}
		if s := out.String(); s != name {
			return s
		}
	}
}

// object writes a struct's object: a random subset of its fields in
// random order, now and then a key in another case, an unknown key or a
// duplicate.
func (g *docGen) object(path string, fields []genField, depth int) {
	g.b.WriteByte('{')
	var written []genField // exact keys so far
	for i, f := range g.r.Perm(len(fields))[:g.r.IntN(len(fields)+1)] {
		if i > 0 {
			g.b.WriteByte(',')
		}
		field := fields[f]
		name := field.name
		switch n := g.r.IntN(40); {
		case n == 0:
			name = g.otherCase(name)
			g.fail(path, fmt.Sprintf("unknown field %+q: keys are case-sensitive, the field is %q", name, field.name))
		case n == 1:
			name += "_unknown"
			g.fail(path, fmt.Sprintf("unknown field %+q", name))
		case n == 2 && len(written) > 0:
			field = written[g.r.IntN(len(written))]
			name = field.name
			g.fail(path, fmt.Sprintf("duplicate key %+q", name))
		default:
			written = append(written, field)
		}
		g.key(name)
		g.value(join(path, name), field.kind, depth+1)
	}
	g.b.WriteByte('}')
}

// join is where the value under key lies, as the decoder's messages say it.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// value writes a value of the model kind.
func (g *docGen) value(path, kind string, depth int) {
	switch kind {
	case "int":
		fmt.Fprint(&g.b, g.r.IntN(2000)-1000)
	case "string":
		fmt.Fprintf(&g.b, "%q", strings.Repeat("s", g.r.IntN(4)))
	case "in":
		g.object(path, inFields, depth)
	case "list":
		g.b.WriteByte('[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.object(fmt.Sprintf("%s[%d]", path, i), inFields, depth)
		}
		g.b.WriteByte(']')
	case "map":
		g.free(path, func(key string) { g.object(join(path, key), inFields, depth+1) })
	default: // any
		g.anyValue(path, depth)
	}
}

// free writes an object with keys of its own choosing, drawn from few
// letters so that they repeat now and then; elem writes each value.
func (g *docGen) free(path string, elem func(key string)) {
	g.b.WriteByte('{')
	seen := map[string]bool{}
	for i := range g.r.IntN(5) {
		if i > 0 {
			g.b.WriteByte(',')
		}
		key := string(rune('a' + g.r.IntN(6)))
		if g.r.IntN(2) == 0 {
			key += "K"
		}
		if seen[key] {
			g.fail(path, fmt.Sprintf("duplicate key %+q", key))
		}
		seen[key] = true
		g.key(key)
		elem(key)
	}
	g.b.WriteByte('}')
}

// anyValue writes any JSON value: objects in it are checked for
// duplicates only.
func (g *docGen) anyValue(path string, depth int) {
	n := g.r.IntN(6)
	if depth > 4 {
		n = 0
	}
	switch n {
	case 0, 1:
		fmt.Fprint(&g.b, g.r.IntN(10))
	case 2:
		g.b.WriteString(`"v"`)
	case 3:
		g.b.WriteString(`null`)
	case 4:
		g.b.WriteByte('[')
		for i := range g.r.IntN(3) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.anyValue(fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		g.b.WriteByte(']')
	default:
		g.free(path, func(key string) { g.anyValue(join(path, key), depth+1) })
	}
}

// TestUnmarshalStrictProperty: over random documents, the strict decoder
// refuses exactly the documents with a key in another case, an unknown
// key or a duplicate key at any depth, naming the first of them and
// where it is; whatever it accepts, encoding/json decodes to the same
// value.
func TestUnmarshalStrictProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 2026))
	var refused, accepted int
	for i := range 4000 {
		g := docGen{r: r}
		g.object("", docFields, 0)
		doc := g.b.String()
		var got strictDoc
		err := protocol.UnmarshalStrict([]byte(doc), &got, "doc")
		if g.problem != "" {
			refused++
			if err == nil {
				t.Fatalf("document %d was accepted, want %q:\n%s", i, g.problem, doc)
			}
			wantCode(t, err, protocol.CodeBadRequest, "doc: "+g.problem)
			continue
		}
		accepted++
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		var plain strictDoc
		if err := plainDecode([]byte(doc), &plain); err != nil {
			t.Fatalf("document %d: strict accepts what encoding/json refuses (%v):\n%s", i, err, doc)
		}
		if !reflect.DeepEqual(got, plain) {
			t.Fatalf("document %d decodes to %+v, encoding/json to %+v:\n%s", i, got, plain, doc)
		}
	}
	if refused < 500 || accepted < 500 {
		t.Fatalf("%d refused, %d accepted: the generator does not exercise both", refused, accepted)
	}
}

// Types with encoding/json's corner cases: promoted fields, a name two
// embedded structs share (hidden), a tagged field beating a promoted one,
// "-" and "-,", an invalid tag, an unexported embedded struct.
type (
	embA struct {
		Name string `json:"name"`
		A    int
	}
	EmbB struct {
		Name string `json:"name"`
		B    int
	}
	embC struct {
		C int
	}
	cornerCases struct {
		embA
		*EmbB
		embC
		Shadow int `json:"A"`
		Own    int `json:"-"`
		Dash   int `json:"-,"`   //nolint:staticcheck // the corner case under test: a field named "-"
		Bad    int `json:"a\\b"` //nolint:staticcheck // the corner case under test: an invalid name, ignored
		Opt    int `json:",omitempty"`
		Inner  struct {
			Z int
		}
		unexported int //nolint:unused // the corner case under test: never decoded
	}
)

// TestStrictShapesMatchEncodingJSON: for every client message type and a
// type of encoding/json's corner cases, the strict decoder knows exactly
// the field names encoding/json writes (so UnmarshalStrict, which leaves
// unknown fields to its key check, refuses every name encoding/json does
// not know), and refuses the same names in another case.
func TestStrictShapesMatchEncodingJSON(t *testing.T) {
	for _, v := range []any{
		&protocol.Envelope{}, &protocol.Hello{}, &protocol.MovementInput{}, &protocol.Input{},
		&protocol.Ping{}, &protocol.LootPickup{}, &protocol.InventoryDrop{}, &protocol.PortalEnter{},
		&cornerCases{},
	} {
		typ := reflect.TypeOf(v).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			known := writtenNames(t, typ)
			for _, name := range candidateNames(typ, nil) {
				doc := fmt.Sprintf(`{%q:null}`, name)
				err := protocol.UnmarshalStrict([]byte(doc), reflect.New(typ).Interface(), "doc")
				if known[name] != (err == nil) {
					t.Errorf("%s: known to encoding/json %v, strict error %v", doc, known[name], err)
				}
				if known[name] {
					if err := plainDecode([]byte(doc), reflect.New(typ).Interface()); err != nil {
						t.Errorf("%s: encoding/json refuses a name it writes: %v", doc, err)
					}
				}
			}
		})
	}
}

// writtenNames are the keys encoding/json writes for typ with every field
// set: its own list of typ's fields.
func writtenNames(t *testing.T, typ reflect.Type) map[string]bool {
	v := reflect.New(typ).Elem()
	fill(v)
	data, err := json.Marshal(v.Interface())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for k := range m {
		names[k] = true
	}
	return names
}

// fill sets every field it can to a non-zero value.
func fill(v reflect.Value) {
	if !v.CanSet() {
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{}`))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	}
}

// candidateNames are every name a field of typ could be decoded under:
// Go names and tag names, embedded structs' too, each also in upper and
// lower case and with its first letter flipped.
func candidateNames(typ reflect.Type, out []string) []string {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, n := range []string{f.Name, tag} {
			if n == "" {
				continue
			}
			flipped := []rune(n)
			if unicode.IsUpper(flipped[0]) {
				flipped[0] = unicode.ToLower(flipped[0])
			} else {
				flipped[0] = unicode.ToUpper(flipped[0])
			}
			out = append(out, n, strings.ToUpper(n), strings.ToLower(n), string(flipped))
		}
		if ft := f.Type; f.Anonymous {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = candidateNames(ft, out)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// duplicateKey is a reference for duplicates, slow and plain: it walks
// the tokens and reports the first key an object has twice.
func duplicateKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.keys[k] {
				return k, true
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return "", false
			}
		}
		if len(stack) == 0 { // a scalar at the top
			return "", false
		}
		if top := stack[len(stack)-1]; top.object {
			top.key = true
		}
	}
}

// FuzzUnmarshalStrict: whatever the bytes, the strict decoder is at least
// as strict as encoding/json, refuses every document with a duplicate key
// (by a token-walking reference), and decodes what it accepts as
// encoding/json does.
func FuzzUnmarshalStrict(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"in":{"x":1,"y":2},"list":[{"x":3}],"map":{"k":{"y":4}},"any":{"q":[1,{"r":2}]},"raw":{"z":null},"e":5}`,
		`{"a":1,"a":2}`,
		`{"any":{"q":1,"\u0071":2}}`,
		`{"Kind":"x"}`,
		`{"\u212aind":"x"}`,
		`{"ſkill":"x"}`,
		`{"list":[{"x":1},{"x":1,"x":2}]}`,
		`{"a":1} {"a":2}`,
		"{}\x00",
		`{"a":"\ud800"}`,
		"{\"map\":{\"\\ufffd\":{},\"\xff\":{}}}", // invalid UTF-8 reads as U+FFFD: a duplicate
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict strictDoc
		strictErr := protocol.UnmarshalStrict(data, &strict, "doc")
		if strictErr != nil {
			wantCode(t, strictErr, protocol.CodeBadRequest, "doc: ")
		}
		if key, dup := duplicateKey(data); dup && strictErr == nil {
			t.Fatalf("accepted a duplicate key %q: %s", key, data)
		}
		var plain strictDoc
		plainErr := plainDecode(data, &plain)
		if plainErr != nil && strictErr == nil {
			t.Fatalf("accepted what encoding/json refuses (%v): %s", plainErr, data)
		}
		if strictErr == nil && !reflect.DeepEqual(strict, plain) {
			t.Fatalf("decoded %+v, encoding/json %+v: %s", strict, plain, data)
		}
		var anyDoc map[string]any
		if err := protocol.UnmarshalStrict(data, &anyDoc, "doc"); err == nil {
			if key, dup := duplicateKey(data); dup {
				t.Fatalf("accepted a duplicate key %q into a map: %s", key, data)
			}
		}
	})
}

// movementFrame is a typical movement.input text frame: one input, an
// acknowledged snapshot tick. Clients send one per input, so the room
// server decodes one per message.
const movementFrame = `{"v":1,"kind":"command","seq":42,"feature":"movement","action":"input","ackTick":1207,"payload":{"inputs":[{"seq":101,"x":0.7071,"y":-0.7071}]}}`

// BenchmarkDecodeMovementInput is the room server's cost of one JSON
// movement message: the envelope, then its payload, both strict.
func BenchmarkDecodeMovementInput(b *testing.B) {
	data := []byte(movementFrame)
	b.ReportAllocs()
	for b.Loop() {
		env, err := protocol.DecodeEnvelope(data)
		if err != nil {
			b.Fatal(err)
		}
		var in protocol.MovementInput
		if err := protocol.DecodePayload(env, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeMovementInputPlain decodes the same frame with
// encoding/json alone, as the room server did before its decoding was
// strict: the baseline BenchmarkDecodeMovementInput is compared with.
func BenchmarkDecodeMovementInputPlain(b *testing.B) {
	data := []byte(movementFrame)
	b.ReportAllocs()
	for b.Loop() {
		var env protocol.Envelope
		if err := plainDecode(data, &env); err != nil {
			b.Fatal(err)
		}
		var in protocol.MovementInput
		if err := plainDecode(env.Payload, &in); err != nil {
			b.Fatal(err)
		}
	}
}
