package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// wantCode fails unless err is a *protocol.ProtocolError with code and a
// message containing msg.
func wantCode(t *testing.T, err error, code protocol.Code, msg string) {
	t.Helper()
	var pe *protocol.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *ProtocolError %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("code = %s, want %s (message %q)", pe.Code, code, pe.Message)
	}
	if !strings.Contains(pe.Message, msg) {
		t.Fatalf("message = %q, want it to contain %q", pe.Message, msg)
	}
}

func TestDecodeEnvelopeRefusals(t *testing.T) {
	tests := []struct {
		name, in, msg string
	}{
		{"empty", ``, "not a JSON object"},
		{"not JSON", `hello`, "not a JSON object"},
		{"truncated", `{"v":1,"kind":"ping"`, "malformed JSON"},
		{"bad syntax", `{"v":1,,"kind":"ping"}`, "malformed JSON"},
		{"array", `[{"v":1,"kind":"ping"}]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"string", `"ping"`, "not a JSON object"},
		{"wrong v", `{"v":2,"kind":"ping"}`, "unsupported version v=2"},
		{"missing v", `{"kind":"ping"}`, "unsupported version v=0"},
		{"v as string", `{"v":"1","kind":"ping"}`, "field v"},
		{"missing kind", `{"v":1}`, "missing kind"},
		{"unknown kind", `{"v":1,"kind":"dance"}`, `unknown kind "dance"`},
		{"unknown feature", `{"v":1,"kind":"command","feature":"magic","action":"cast"}`, `unknown command "magic.cast"`},
		{"unknown action", `{"v":1,"kind":"command","feature":"movement","action":"jump"}`, `unknown command "movement.jump"`},
		{"mixed pair", `{"v":1,"kind":"command","feature":"combat","action":"input"}`, `unknown command "combat.input"`},
		{"command without feature", `{"v":1,"kind":"command"}`, `unknown command "."`},
		{"feature on ping", `{"v":1,"kind":"ping","feature":"movement","action":"input"}`, "only allowed on commands"},
		{"action on hello", `{"v":1,"kind":"hello","action":"enter"}`, "only allowed on commands"},
		{"unknown field", `{"v":1,"kind":"ping","extra":true}`, `unknown field "extra"`},
		{"trailing data", `{"v":1,"kind":"ping"} {}`, "data after the JSON object"},
		{"huge v", `{"v":1e400,"kind":"ping"}`, "v"},
		{"v beyond int64", `{"v":99999999999999999999,"kind":"ping"}`, "field v"},
		{"seq beyond uint32", `{"v":1,"kind":"ping","seq":4294967296}`, "field seq"},
		{"negative seq", `{"v":1,"kind":"ping","seq":-1}`, "field seq"},
		{"fractional seq", `{"v":1,"kind":"ping","seq":1.5}`, "field seq"},
		{"ackTick beyond uint64", `{"v":1,"kind":"ping","ackTick":18446744073709551616}`, "field ackTick"},
		{"ackTick float", `{"v":1,"kind":"ping","ackTick":1e30}`, "field ackTick"},
		{"too large", `{"v":1,"kind":"ping","payload":"` + strings.Repeat("x", protocol.MaxMessageBytes) + `"}`, "the limit is 16384"},
		// Strict keys: encoding/json alone would take every one of these.
		{"key in another case", `{"V":1,"kind":"ping"}`, `unknown field "V": keys are case-sensitive, the field is "v"`},
		{"kind capitalised", `{"v":1,"Kind":"ping"}`, `unknown field "Kind"`},
		{"kelvin sign for k", `{"v":1,"\u212aind":"ping"}`, `unknown field "\u212aind": keys are case-sensitive, the field is "kind"`},
		{"duplicate key", `{"v":1,"kind":"ping","kind":"hello"}`, `duplicate key "kind"`},
		{"duplicate v", `{"v":2,"kind":"ping","v":1}`, `duplicate key "v"`},
		{"duplicate through an escape", `{"v":1,"kind":"ping","\u006bind":"hello"}`, `duplicate key "kind"`},
		{"case twin", `{"v":1,"kind":"ping","KIND":"hello"}`, `unknown field "KIND"`},
		{"duplicate in the payload", `{"v":1,"kind":"ping","payload":{"clientTime":1,"clientTime":2}}`, `payload: duplicate key "clientTime"`},
		{"duplicate deep in the payload", `{"v":1,"kind":"command","feature":"movement","action":"input","payload":{"inputs":[{"seq":1},{"x":0,"x":1}]}}`,
			`envelope: payload.inputs[1]: duplicate key "x"`},
	}
	for _, kind := range []protocol.Kind{
		protocol.KindWelcome, protocol.KindAck, protocol.KindSnapshot, protocol.KindEvent,
		protocol.KindTransfer, protocol.KindError, protocol.KindPong,
	} {
		tests = append(tests, struct{ name, in, msg string }{
			"server kind " + string(kind), fmt.Sprintf(`{"v":1,"kind":%q}`, kind), "sent by the server only",
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := protocol.DecodeEnvelope([]byte(tt.in))
			wantCode(t, err, protocol.CodeBadRequest, tt.msg)
			if env.Kind != "" || env.Payload != nil {
				t.Errorf("refused envelope is not zero: %+v", env)
			}
		})
	}
}

func TestDecodeEnvelopeAccepts(t *testing.T) {
	commands := []string{
		"movement.input", "combat.attack", "loot.pickup", "inventory.equip",
		"inventory.unequip", "inventory.drop", "door.toggle", "portal.enter",
	}
	for _, c := range commands {
		feature, action, _ := strings.Cut(c, ".")
		in := fmt.Sprintf(`{"v":1,"kind":"command","seq":42,"feature":%q,"action":%q,"ackTick":7,"payload":{"a":1}}`, feature, action)
		env, err := protocol.DecodeEnvelope([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if env.Kind != protocol.KindCommand || env.Seq != 42 || env.Feature != feature || env.Action != action || env.AckTick != 7 {
			t.Errorf("%s: decoded %+v", c, env)
		}
		if string(env.Payload) != `{"a":1}` {
			t.Errorf("%s: payload %s", c, env.Payload)
		}
	}
	for _, in := range []string{
		` {"v":1,"kind":"hello","payload":{"ticket":"t","codec":"binary"}} `,
		`{"v":1,"kind":"ping","payload":{"clientTime":12.5}}`,
		`{"v":1,"kind":"ping"}`,
	} {
		if _, err := protocol.DecodeEnvelope([]byte(in)); err != nil {
			t.Errorf("DecodeEnvelope(%s) = %v", in, err)
		}
	}
}

func TestDecodePayload(t *testing.T) {
	env := func(payload string) protocol.Envelope {
		return protocol.Envelope{V: 1, Kind: protocol.KindCommand, Payload: json.RawMessage(payload)}
	}
	var in protocol.MovementInput
	if err := protocol.DecodePayload(env(`{"inputs":[{"seq":1,"x":0.5,"y":-0.5}]}`), &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Inputs) != 1 || in.Inputs[0] != (protocol.Input{Seq: 1, X: 0.5, Y: -0.5}) {
		t.Fatalf("decoded %+v", in)
	}
	refusals := []struct{ name, payload, msg string }{
		{"missing", ``, "missing"},
		{"null", `null`, "null"},
		{"not an object", `[1]`, "not a JSON object"},
		{"unknown field", `{"inputs":[],"speed":9}`, `unknown field "speed"`},
		{"unknown nested field", `{"inputs":[{"seq":1,"x":0,"y":0,"z":1}]}`, `unknown field "z"`},
		{"wrong type", `{"inputs":{"seq":1}}`, "inputs"},
		{"seq beyond uint32", `{"inputs":[{"seq":4294967296,"x":0,"y":0}]}`, "seq"},
		{"x beyond float32", `{"inputs":[{"seq":1,"x":1e39,"y":0}]}`, "x"},
		{"trailing data", `{"inputs":[]}x`, "data after the JSON object"},
		{"malformed", `{"inputs":[`, "malformed JSON"},
		{"key in another case", `{"Inputs":[]}`, `payload: unknown field "Inputs": keys are case-sensitive, the field is "inputs"`},
		{"nested key in another case", `{"inputs":[{"seq":1,"X":0,"y":0}]}`, `payload: inputs[0]: unknown field "X": keys are case-sensitive`},
		{"duplicate key", `{"inputs":[],"inputs":[{"seq":1}]}`, `payload: duplicate key "inputs"`},
		{"nested duplicate", `{"inputs":[{"seq":1,"x":0,"y":0},{"seq":2,"seq":3}]}`, `payload: inputs[1]: duplicate key "seq"`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			var v protocol.MovementInput
			wantCode(t, protocol.DecodePayload(env(tt.payload), &v), protocol.CodeBadRequest, tt.msg)
		})
	}
}

func TestValidateInput(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		x, y float32
		ok   bool
	}{
		{0, 0, true},
		{1, 0, true},
		{0, -1, true},
		{0.6, 0.8, true},
		{0.70710677, 0.70710677, true},
		{1.0009, 0, true}, // inside the tolerance
		{1.002, 0, false},
		{0.8, 0.8, false},
		{3, 4, false},
		{-50, 0, false},
		{nan, 0, false},
		{0, inf, false},
		{-inf, 0, false},
		{math.MaxFloat32, math.MaxFloat32, false},
	}
	for _, tt := range tests {
		err := protocol.ValidateInput(protocol.Input{Seq: 9, X: tt.x, Y: tt.y})
		if tt.ok {
			if err != nil {
				t.Errorf("ValidateInput(%v, %v) = %v, want nil", tt.x, tt.y, err)
			}
			continue
		}
		wantCode(t, err, protocol.CodeInvalidAction, "input 9")
	}
}

func TestMarshalMessage(t *testing.T) {
	tests := []struct {
		kind    protocol.Kind
		seq     uint32
		payload any
		want    string
	}{
		{protocol.KindPong, 3, protocol.Pong{ClientTime: 1.5, ServerTime: 2},
			`{"v":1,"kind":"pong","seq":3,"payload":{"clientTime":1.5,"serverTime":2}}`},
		{protocol.KindAck, 0, protocol.Ack{Seq: 4, OK: false, Code: protocol.CodeCooldown},
			`{"v":1,"kind":"ack","payload":{"seq":4,"ok":false,"code":"cooldown"}}`},
		{protocol.KindError, 0, nil, `{"v":1,"kind":"error"}`},
		{protocol.KindEvent, math.MaxUint32, protocol.Event{Type: protocol.EventDoor, Tick: 5, Detail: `"<open>"`},
			`{"v":1,"kind":"event","seq":4294967295,"payload":{"type":"door","tick":5,"detail":"\"\u003copen\u003e\""}}`},
	}
	for _, tt := range tests {
		got, err := protocol.MarshalMessage(tt.kind, tt.seq, tt.payload)
		if err != nil {
			t.Fatalf("MarshalMessage(%s) = %v", tt.kind, err)
		}
		if string(got) != tt.want {
			t.Errorf("MarshalMessage(%s) =\n%s\nwant\n%s", tt.kind, got, tt.want)
		}
		var env protocol.Envelope
		if err := json.Unmarshal(got, &env); err != nil || env.V != protocol.Version || env.Kind != tt.kind || env.Seq != tt.seq {
			t.Errorf("MarshalMessage(%s) does not parse back: %+v, %v", tt.kind, env, err)
		}
	}
}

func TestMarshalMessageErrors(t *testing.T) {
	if _, err := protocol.MarshalMessage(`evil","v":2`, 0, nil); err == nil {
		t.Error("a kind that needs escaping was accepted")
	}
	if _, err := protocol.MarshalMessage("", 0, nil); err == nil {
		t.Error("an empty kind was accepted")
	}
	_, err := protocol.MarshalMessage(protocol.KindEvent, 0, map[string]any{"c": make(chan int)})
	wantCode(t, err, protocol.CodeInternal, "marshal event payload")
}

func TestProtocolError(t *testing.T) {
	err := protocol.Errorf(protocol.CodeRoomFull, "room %s has %d seats", "town", 8)
	if got, want := err.Error(), "room_full: room town has 8 seats"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("join: %w", err)
	if got := protocol.CodeOf(wrapped); got != protocol.CodeRoomFull {
		t.Errorf("CodeOf(wrapped) = %s", got)
	}
	if got := protocol.CodeOf(errors.New("boom")); got != protocol.CodeInternal {
		t.Errorf("CodeOf(plain) = %s", got)
	}
	if got := protocol.CodeOf(nil); got != "" {
		t.Errorf("CodeOf(nil) = %s", got)
	}
}
