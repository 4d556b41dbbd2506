package joinapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

func (e *env) resume(room string, req any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, e.roomPath(room)+"/resume", "", req)
}

// resumeToken signs a resume token of room for instance with keys.
func resumeToken(t *testing.T, keys token.KeySet, room, instance string, ttl time.Duration) string {
	t.Helper()
	raw, _, err := token.NewSigner(token.StaticKeys(keys), clock).Sign(token.Claims{Type: token.TypeResume,
		Subject: "user-1", Character: "c-1", Room: room, Map: instance, Session: "seat", Epoch: 3}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestResumeLocatesTheMap: a resume token of the room says where its map
// runs now, instanced maps too; a token of another room, a ticket, or a
// token of a map that is not running is refused with its code.
func TestResumeLocatesTheMap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	town := gamev1.MapInstanceName("demo", "town")
	r := e.resume("demo", ResumeRequest{ResumeToken: resumeToken(t, keys, "demo", town, 30*time.Second)})
	var got ResumeResponse
	if err := json.Unmarshal(r.body, &got); r.status != http.StatusOK || err != nil {
		t.Fatalf("resume: %s", r)
	}
	if got != (ResumeResponse{Endpoint: "ws://10.0.0.7:7350/ws", Map: "town", Instance: town}) {
		t.Fatalf("resume answer %+v", got)
	}

	crypt := e.createInstance("demo", "crypt")
	want(t, "a map not ready", e.resume("demo", ResumeRequest{ResumeToken: resumeToken(t, keys, "demo", crypt.Name, 30*time.Second)}),
		http.StatusConflict, CodeRoomNotReady)
	e.setStatus(crypt, ready("ws://10.0.0.8:7350/ws"))
	e.eventually(http.StatusOK, "", func() reply {
		return e.resume("demo", ResumeRequest{ResumeToken: resumeToken(t, keys, "demo", crypt.Name, 30*time.Second)})
	})

	otherKeys := e.readyRoom("other", "ws://10.0.0.9:7350/ws")
	for name, raw := range map[string]string{
		"another room's token": resumeToken(t, otherKeys, "other", gamev1.MapInstanceName("other", "town"), 30*time.Second),
		"a join ticket":        verifyJoin(t, e, keys),
		"garbage":              "not-a-token",
	} {
		want(t, name, e.resume("demo", ResumeRequest{ResumeToken: raw}), http.StatusUnauthorized, CodeUnauthorized)
	}
	want(t, "no token", e.resume("demo", ResumeRequest{}), http.StatusBadRequest, CodeBadRequest)
	want(t, "no room", e.resume("nowhere", ResumeRequest{ResumeToken: "x"}), http.StatusNotFound, CodeRoomNotFound)
	gone := resumeToken(t, keys, "demo", gamev1.MapInstanceName("demo", "swamp"), 30*time.Second)
	want(t, "a map not running", e.resume("demo", ResumeRequest{ResumeToken: gone}), http.StatusConflict, CodeRoomNotReady)
}

// verifyJoin is a join ticket of the room, which is no resume token.
func verifyJoin(t *testing.T, e *env, keys token.KeySet) string {
	t.Helper()
	resp, _ := verify(t, e.join("demo", JoinRequest{}), keys, "demo", gamev1.MapInstanceName("demo", "town"))
	return resp.Ticket
}
