package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
)

// commandActions is commands by feature and action: a map lookup keeps
// DecodeEnvelope a single check per command.
var commandActions = func() map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for _, c := range commands {
		if m[c.Feature] == nil {
			m[c.Feature] = map[string]bool{}
		}
		m[c.Feature][c.Action] = true
	}
	return m
}()

// serverKinds are refused from clients with their own message, because a
// client echoing a server message is a bug worth naming precisely.
var serverKinds = map[Kind]bool{
	KindWelcome: true, KindAck: true, KindSnapshot: true, KindEvent: true,
	KindTransfer: true, KindError: true, KindPong: true,
}

// inputTolerance absorbs float rounding in clients that normalise a
// direction before sending it.
const inputTolerance = 1e-3

// DecodeEnvelope parses one client text frame: a single JSON object
// (strict, as UnmarshalStrict says: keys in their exact case, none twice
// at any depth, no unknown fields) with v == Version, a client kind
// (hello, command or ping), and for a command a known feature.action pair; feature and action are
// refused on other kinds. The payload is left raw for DecodePayload. Every
// error is a *ProtocolError with CodeBadRequest whose message names what is
// wrong.
func DecodeEnvelope(data []byte) (Envelope, error) {
	var env Envelope
	if len(data) > MaxMessageBytes {
		return env, Errorf(CodeBadRequest, "message is %d bytes, the limit is %d", len(data), MaxMessageBytes)
	}
	if err := UnmarshalStrict(data, &env, "envelope"); err != nil {
		return Envelope{}, err
	}
	if err := checkEnvelope(env); err != nil {
		return Envelope{}, err
	}
	return env, nil
}

// checkEnvelope validates the fields of a syntactically good envelope.
func checkEnvelope(env Envelope) error {
	if env.V != Version {
		return Errorf(CodeBadRequest, "unsupported version v=%d, want %d", env.V, Version)
	}
	switch env.Kind {
	case KindCommand:
		if !commandActions[env.Feature][env.Action] {
			return Errorf(CodeBadRequest, "unknown command %q", env.Feature+"."+env.Action)
		}
		return nil
	case KindHello, KindPing:
		if env.Feature != "" || env.Action != "" {
			return Errorf(CodeBadRequest, "feature and action are only allowed on commands, not on %q", env.Kind)
		}
		return nil
	case "":
		return Errorf(CodeBadRequest, "missing kind")
	}
	if serverKinds[env.Kind] {
		return Errorf(CodeBadRequest, "kind %q is sent by the server only", env.Kind)
	}
	return Errorf(CodeBadRequest, "unknown kind %q", env.Kind)
}

// DecodePayload unmarshals env.Payload into v with UnmarshalStrict: the
// payload must be present and not null; keys must match fields exactly, in
// case, once each; unknown fields and trailing data are refused; numbers
// must fit their fields. Errors are *ProtocolError with CodeBadRequest.
func DecodePayload(env Envelope, v any) error {
	p := bytes.TrimSpace(env.Payload)
	if len(p) == 0 {
		return Errorf(CodeBadRequest, "payload: missing")
	}
	if bytes.Equal(p, []byte("null")) {
		return Errorf(CodeBadRequest, "payload: null")
	}
	return UnmarshalStrict(p, v, "payload")
}

// UnmarshalStrict decodes data, which must hold exactly one JSON object,
// into v (a non-nil pointer), more strictly than encoding/json: every key
// must name a field of its object exactly, in the same case ("Ticket" is
// not "ticket"); no object, at any depth, may have the same key twice; no
// key may be unknown; nothing but white space may follow the object; and
// every number must fit its field. Errors are *ProtocolError with
// CodeBadRequest whose message starts with what ("payload", "body") and
// names the key and where it is ("inputs[0]: unknown field \"z\"").
//
// The keys are checked first, in one pass over the bytes that allocates
// nothing for ordinary messages (checkKeys); encoding/json then decodes.
// The join API decodes its bodies with it too.
func UnmarshalStrict(data []byte, v any, what string) error {
	if first := firstByte(data); first != '{' {
		return Errorf(CodeBadRequest, "%s: not a JSON object", what)
	}
	end, err := checkKeys(data, shapeOf(reflect.TypeOf(v)))
	if err != nil {
		if ke, ok := errors.AsType[*keyError](err); ok {
			return Errorf(CodeBadRequest, "%s: %s", what, ke.text())
		}
		// Not JSON: encoding/json says what is wrong with it.
		if err := json.Unmarshal(data, v); err != nil {
			return jsonError(what, err)
		}
		return Errorf(CodeBadRequest, "%s: malformed JSON", what)
	}
	if len(bytes.TrimLeft(data[end:], " \t\r\n")) != 0 {
		return Errorf(CodeBadRequest, "%s: data after the JSON object", what)
	}
	// checkKeys refused unknown fields already, by encoding/json's own
	// rules (TestStrictShapesMatchEncodingJSON holds it to them), so
	// Unmarshal, cheaper than a Decoder, does the rest.
	if err := json.Unmarshal(data[:end], v); err != nil {
		return jsonError(what, err)
	}
	return nil
}

// firstByte returns the first non-space byte of data, or 0.
func firstByte(data []byte) byte {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// jsonError turns an encoding/json error into a bad_request with a message
// a client author can act on.
func jsonError(what string, err error) *ProtocolError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field != "" {
			return Errorf(CodeBadRequest, "%s: field %s: %s does not fit %s", what, typeErr.Field, typeErr.Value, jsonTypeName(typeErr.Type))
		}
		return Errorf(CodeBadRequest, "%s: %s does not fit %s", what, typeErr.Value, jsonTypeName(typeErr.Type))
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Errorf(CodeBadRequest, "%s: malformed JSON: %v", what, err)
	}
	// Unknown fields and the rest carry a useful text but no exported type.
	return Errorf(CodeBadRequest, "%s: %s", what, trimJSONPrefix(err.Error()))
}

// jsonTypeName names the JSON type a Go type expects; numbers keep their Go
// name because it tells the range (uint32, float32, ...).
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "the field"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return t.String()
	}
}

// trimJSONPrefix drops encoding/json's "json: " prefix so messages read as
// ours.
func trimJSONPrefix(s string) string {
	const prefix = "json: "
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

// MarshalMessage builds the server envelope {"v":1,"kind":kind,"seq":seq,
// "payload":payload} and returns its JSON. seq is omitted when 0 and payload
// when nil. The envelope is assembled by hand around the marshalled payload
// so that the payload is encoded once, not once more as a RawMessage.
func MarshalMessage(kind Kind, seq uint32, payload any) ([]byte, error) {
	if !isPlainKind(kind) {
		return nil, Errorf(CodeInternal, "marshal: invalid kind %q", kind)
	}
	var body []byte
	if payload != nil {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return nil, Errorf(CodeInternal, "marshal %s payload: %v", kind, err)
		}
	}
	out := make([]byte, 0, len(`{"v":1,"kind":"","seq":4294967295,"payload":}`)+len(kind)+len(body))
	out = append(out, `{"v":`...)
	out = strconv.AppendInt(out, Version, 10)
	out = append(out, `,"kind":"`...)
	out = append(out, kind...)
	out = append(out, '"')
	if seq != 0 {
		out = append(out, `,"seq":`...)
		out = strconv.AppendUint(out, uint64(seq), 10)
	}
	if body != nil {
		out = append(out, `,"payload":`...)
		out = append(out, body...)
	}
	return append(out, '}'), nil
}

// isPlainKind reports whether kind is non-empty lowercase ASCII letters and
// underscores, which needs no JSON escaping; all defined kinds are.
func isPlainKind(kind Kind) bool {
	if kind == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// ValidateInput checks one movement input: both components finite and the
// direction no longer than 1 (plus a small tolerance). The server applies
// its own speed, so a longer vector can only be an attempt to move faster
// or teleport; it is refused with CodeInvalidAction.
func ValidateInput(in Input) error {
	x, y := float64(in.X), float64(in.Y)
	if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
		return Errorf(CodeInvalidAction, "input %d: direction is not finite", in.Seq)
	}
	if l := math.Hypot(x, y); l > 1+inputTolerance {
		return Errorf(CodeInvalidAction, "input %d: direction length %.4g exceeds 1", in.Seq, l)
	}
	return nil
}
