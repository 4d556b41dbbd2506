package protocol

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Strict keys. encoding/json matches a key to a field whatever its case
// and lets a later duplicate overwrite an earlier one, so {"Ticket":..} or
// {"seq":1,"seq":2} would pass DisallowUnknownFields. checkKeys walks the
// bytes once before decoding, guided by the shape of the Go type, and
// refuses both.

// maxDepth is encoding/json's nesting limit; deeper is a syntax error.
const maxDepth = 10000

// shapeKind is what checkKeys expects at one place of the JSON.
type shapeKind uint8

const (
	// shapeAny: no Go type to go by (interface, json.RawMessage, a type
	// with its own UnmarshalJSON): only duplicate keys are refused, at
	// every depth.
	shapeAny shapeKind = iota
	// shapeScalar: a string, number or bool field. An object or array
	// there is encoding/json's type error to report, so it is skipped.
	shapeScalar
	// shapeStruct: keys must be the struct's JSON field names, exactly.
	shapeStruct
	// shapeMap: any keys, each once; values of elem's shape.
	shapeMap
	// shapeList: elements of elem's shape.
	shapeList
)

// shape is what checkKeys knows of a Go type. Shapes are built once per
// type and never change.
type shape struct {
	kind   shapeKind
	fields []shapeField // shapeStruct, in field order
	elem   *shape       // shapeMap, shapeList
}

// shapeField is one JSON field of a struct.
type shapeField struct {
	name  string
	shape *shape
}

var (
	anyShape    = &shape{kind: shapeAny}
	scalarShape = &shape{kind: shapeScalar}
	shapes      sync.Map // reflect.Type -> *shape

	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf is the shape of what t (the type of v in Unmarshal) decodes.
func shapeOf(t reflect.Type) *shape {
	if t == nil {
		return anyShape
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	b := shapeBuilder{building: map[reflect.Type]*shape{}}
	s, _ := shapes.LoadOrStore(t, b.shape(t))
	return s.(*shape)
}

// shapeBuilder builds the shape of one type and those it contains; a
// type that contains itself gets the shape being built.
type shapeBuilder struct {
	building map[reflect.Type]*shape
}

func (b *shapeBuilder) shape(t reflect.Type) *shape {
	if s, ok := b.building[t]; ok {
		return s
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return anyShape
	}
	if t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return scalarShape // decoded from a string only
	}
	switch t.Kind() {
	case reflect.Pointer:
		b.building[t] = anyShape // a pointer type that points to itself
		s := b.shape(t.Elem())
		b.building[t] = s
		return s
	case reflect.Interface:
		return anyShape
	case reflect.Struct:
		s := &shape{kind: shapeStruct}
		b.building[t] = s
		s.fields = b.structFields(t)
		return s
	case reflect.Map:
		s := &shape{kind: shapeMap}
		b.building[t] = s
		s.elem = b.shape(t.Elem())
		return s
	case reflect.Slice, reflect.Array:
		s := &shape{kind: shapeList}
		b.building[t] = s
		s.elem = b.shape(t.Elem())
		return s
	default:
		return scalarShape
	}
}

// jsonField is a field encoding/json decodes into, found while walking a
// struct and the structs it embeds.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	typ    reflect.Type
}

// structFields lists the JSON fields of struct t by encoding/json's rules
// (typeFields in encoding/json/encode.go): exported fields and those
// promoted from embedded structs, named by their tag or else their Go
// name, "-" left out; of fields with one name the shallowest wins, then a
// tagged one, and a tie hides them all.
func (b *shapeBuilder) structFields(t reflect.Type) []shapeField {
	var found []jsonField
	next := []jsonField{{typ: t}}
	visited := map[reflect.Type]bool{}
	var count map[reflect.Type]int
	for len(next) > 0 {
		current := next
		next = nil
		nextCount := map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					field := jsonField{name: name, tagged: name != "", index: index, typ: sf.Type}
					if name == "" {
						field.name = sf.Name
					}
					found = append(found, field)
					if count[f.typ] > 1 { // embedded twice at this depth: a tie
						found = append(found, field)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, jsonField{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
		count = nextCount
	}
	slices.SortFunc(found, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var dominant []jsonField
	for i := 0; i < len(found); {
		j := i + 1
		for j < len(found) && found[j].name == found[i].name {
			j++
		}
		if j-i == 1 || len(found[i].index) != len(found[i+1].index) || found[i].tagged != found[i+1].tagged {
			dominant = append(dominant, found[i])
		}
		i = j
	}
	slices.SortFunc(dominant, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	fields := make([]shapeField, len(dominant))
	for i, f := range dominant {
		fields[i] = shapeField{name: f.name, shape: b.shape(f.typ)}
	}
	return fields
}

// isValidTag is encoding/json's test of a tag name; an invalid one is
// ignored and the Go name used.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// keyError is a key checkKeys refuses: what is wrong, and where.
type keyError struct {
	msg string
	// path holds where the object is, innermost first: ".key" for a
	// member, "[i]" for an array element.
	path []string
}

func (e *keyError) Error() string { return e.text() }

// text is "where: what" ("inputs[0]: duplicate key \"seq\""), or "what"
// in the top-level object.
func (e *keyError) text() string {
	if len(e.path) == 0 {
		return e.msg
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	return strings.TrimPrefix(b.String(), ".") + ": " + e.msg
}

// errNotJSON is checkKeys' answer to bytes that are not JSON; encoding/json
// then says precisely what is wrong.
var errNotJSON = errors.New("not JSON")

// checkKeys checks the keys of the JSON value at the start of data against
// s and returns where the value ends. It is lenient about everything else:
// encoding/json, which decodes afterwards, checks the syntax.
func checkKeys(data []byte, s *shape) (int, error) {
	c := keyChecker{data: data}
	if err := c.value(s); err != nil {
		return 0, err
	}
	return c.pos, nil
}

// keyChecker walks JSON bytes.
type keyChecker struct {
	data  []byte
	pos   int
	depth int
}

func (c *keyChecker) space() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\r', '\n':
			c.pos++
		default:
			return
		}
	}
}

// value checks one value of shape s.
func (c *keyChecker) value(s *shape) error {
	c.space()
	if c.pos >= len(c.data) {
		return errNotJSON
	}
	switch c.data[c.pos] {
	case '{':
		return c.object(s)
	case '[':
		return c.array(s)
	case '"':
		_, _, err := c.str()
		return err
	default:
		return c.literal()
	}
}

// object checks an object: its keys against s, and its values.
func (c *keyChecker) object(s *shape) error {
	if c.depth++; c.depth > maxDepth {
		return errNotJSON
	}
	c.pos++ // '{'
	var seen keySet
	for first := true; ; first = false {
		c.space()
		if c.pos >= len(c.data) {
			return errNotJSON
		}
		if first && c.data[c.pos] == '}' {
			c.pos++
			c.depth--
			return nil
		}
		if c.data[c.pos] != '"' {
			return errNotJSON
		}
		start, plain, err := c.str()
		if err != nil {
			return err
		}
		key := c.data[start : c.pos-1]
		if !plain {
			if key, err = unquote(c.data[start-1 : c.pos]); err != nil {
				return err
			}
		}
		c.space()
		if c.pos >= len(c.data) || c.data[c.pos] != ':' {
			return errNotJSON
		}
		c.pos++
		child, err := s.member(key, &seen)
		if err != nil {
			return err
		}
		if err := c.value(child); err != nil {
			return under(err, func() string { return "." + string(key) })
		}
		if done, err := c.separator('}'); done || err != nil {
			return err
		}
	}
}

// under adds where to the path of a key error from a nested value.
func under(err error, where func() string) error {
	if ke, ok := errors.AsType[*keyError](err); ok {
		ke.path = append(ke.path, where())
		return ke
	}
	return err
}

// separator reads what follows a member or an element: a comma, or the
// closing byte of its object or array (done).
func (c *keyChecker) separator(closing byte) (done bool, err error) {
	c.space()
	if c.pos >= len(c.data) {
		return false, errNotJSON
	}
	switch c.data[c.pos] {
	case ',':
		c.pos++
		return false, nil
	case closing:
		c.pos++
		c.depth--
		return true, nil
	default:
		return false, errNotJSON
	}
}

// member is the shape of the value under key in an object of shape s,
// or why key is refused there. seen holds the object's keys so far.
func (s *shape) member(key []byte, seen *keySet) (*shape, error) {
	switch s.kind {
	case shapeScalar:
		return scalarShape, nil // encoding/json refuses the object itself
	case shapeStruct:
		i, err := s.field(key)
		if err != nil {
			return nil, err
		}
		if !seen.addField(i, key) {
			return nil, duplicate(key)
		}
		return s.fields[i].shape, nil
	case shapeMap:
		if !seen.add(key) {
			return nil, duplicate(key)
		}
		return s.elem, nil
	default:
		if !seen.add(key) {
			return nil, duplicate(key)
		}
		return anyShape, nil
	}
}

func duplicate(key []byte) *keyError {
	return &keyError{msg: fmt.Sprintf("duplicate key %+q", key)}
}

// field is the index of the struct field named key exactly. A key that
// matches one only in another case, or none, is refused.
func (s *shape) field(key []byte) (int, error) {
	for i := range s.fields {
		if s.fields[i].name == string(key) {
			return i, nil
		}
	}
	for _, f := range s.fields {
		if bytes.EqualFold([]byte(f.name), key) {
			return 0, &keyError{msg: fmt.Sprintf("unknown field %+q: keys are case-sensitive, the field is %q", key, f.name)}
		}
	}
	return 0, &keyError{msg: fmt.Sprintf("unknown field %+q", key)}
}

// array checks the elements of an array.
func (c *keyChecker) array(s *shape) error {
	if c.depth++; c.depth > maxDepth {
		return errNotJSON
	}
	c.pos++ // '['
	elem := anyShape
	switch s.kind {
	case shapeList:
		elem = s.elem
	case shapeScalar, shapeStruct, shapeMap:
		elem = scalarShape // encoding/json refuses the array itself
	}
	for i := 0; ; i++ {
		c.space()
		if c.pos >= len(c.data) {
			return errNotJSON
		}
		if i == 0 && c.data[c.pos] == ']' {
			c.pos++
			c.depth--
			return nil
		}
		if err := c.value(elem); err != nil {
			return under(err, func() string { return "[" + strconv.Itoa(i) + "]" })
		}
		if done, err := c.separator(']'); done || err != nil {
			return err
		}
	}
}

// str skips a string and returns where its bytes start, after the
// quote; they end before the closing quote, at c.pos-1. plain means they
// are the string's value as is (no escapes, valid UTF-8), so keys compare
// as encoding/json reads them.
func (c *keyChecker) str() (start int, plain bool, err error) {
	start = c.pos + 1
	plain = true
	ascii := true
	for i := start; i < len(c.data); i++ {
		b := c.data[i]
		if !stringSpecial[b] {
			continue
		}
		switch {
		case b == '"':
			c.pos = i + 1
			return start, plain && (ascii || utf8.Valid(c.data[start:i])), nil
		case b == '\\':
			plain = false
			i++
		case b < 0x20:
			return 0, false, errNotJSON
		default:
			ascii = false
		}
	}
	return 0, false, errNotJSON
}

// stringSpecial marks the bytes str must look at: the quote, the
// backslash, control characters and non-ASCII.
var stringSpecial = func() (t [256]bool) {
	for b := range t {
		t[b] = b < 0x20 || b == '"' || b == '\\' || b >= 0x80
	}
	return t
}()

// literal skips a number, true, false or null.
func (c *keyChecker) literal() error {
	start := c.pos
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			if c.pos == start {
				return errNotJSON
			}
			return nil
		case '{', '[', '"', ':':
			return errNotJSON
		}
		c.pos++
	}
	if c.pos == start {
		return errNotJSON
	}
	return nil
}

// unquote is the value of a quoted key with escapes or invalid UTF-8, as
// encoding/json reads it.
func unquote(quoted []byte) ([]byte, error) {
	var key string
	if err := json.Unmarshal(quoted, &key); err != nil {
		return nil, errNotJSON
	}
	return []byte(key), nil
}

// keySet holds an object's keys to find duplicates: a struct's as a bit
// per field (structs of up to 64 fields), others' in the set itself while
// they are few, so ordinary messages cost no allocation.
type keySet struct {
	fields uint64
	few    [8][]byte
	n      int
	many   map[string]struct{}
}

// addField records the struct field i, named key, and reports whether it
// is new.
func (k *keySet) addField(i int, key []byte) bool {
	if i >= 64 {
		return k.add(key)
	}
	if k.fields&(1<<i) != 0 {
		return false
	}
	k.fields |= 1 << i
	return true
}

// add records key and reports whether it is new.
func (k *keySet) add(key []byte) bool {
	for _, seen := range k.few[:k.n] {
		if bytes.Equal(seen, key) {
			return false
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return true
	}
	if k.many == nil {
		k.many = map[string]struct{}{}
	}
	if _, ok := k.many[string(key)]; ok {
		return false
	}
	k.many[string(key)] = struct{}{}
	return true
}
