package roomserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/directory"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

func TestParseStaticDirectory(t *testing.T) {
	d, err := ParseStaticDirectory("crypt=demo-crypt@ws://127.0.0.1:7351/ws, town=demo-town@ws://h/ws")
	if err != nil {
		t.Fatal(err)
	}
	if d["crypt"] != (Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: "ws://127.0.0.1:7351/ws"}) || len(d) != 2 {
		t.Fatalf("directory = %+v", d)
	}
	for _, bad := range []string{"crypt", "crypt=demo-crypt", "=x@y", "crypt=@ws://h", "crypt=i@"} {
		if _, err := ParseStaticDirectory(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestJoinAPIDirectoryCodes: what the join API answers becomes what the
// player is told.
func TestJoinAPIDirectoryCodes(t *testing.T) {
	cases := map[string]protocol.Code{
		directory.CodeMapQuarantined: protocol.CodeMapQuarantined,
		directory.CodeRoomNotReady:   protocol.CodeMapQuarantined,
		directory.CodeRateLimited:    protocol.CodeRateLimited,
		directory.CodeBadRequest:     protocol.CodeInvalidAction,
		directory.CodeRoomFull:       protocol.CodeRoomFull,
	}
	for answer, want := range cases {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"code":%q,"message":"no","retryAfter":7}`, answer)
		}))
		dir := JoinAPIDirectory(directory.New(api.URL, "default", "demo", "demo-town", *newKeys(t), nil))
		_, err := dir.Resolve(context.Background(), DestinationRequest{Map: "crypt", User: "u", Character: "c"})
		var pe *protocol.ProtocolError
		if !errors.As(err, &pe) || pe.Code != want {
			t.Errorf("join API %s: error = %v, want %s", answer, err, want)
		}
		api.Close()
	}
}
