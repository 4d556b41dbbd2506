package joinapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/token"
)

// ResumeRequest is the body of a resume: the client's newest resume token.
type ResumeRequest struct {
	ResumeToken string `json:"resumeToken"`
}

// ResumeResponse says where the map the token names runs now.
type ResumeResponse struct {
	// Endpoint is the map's WebSocket URL: say hello{resume} there.
	Endpoint string `json:"endpoint"`
	// Map is the map's name in the room's spec; Instance its MapInstance.
	Map      string `json:"map"`
	Instance string `json:"instance"`
}

// maxResumeTokenLifetime bounds the resume tokens the join API takes. A
// room server signs them for its resume grace (30 s by default; its own
// check is that exact bound); the join API does not know each pod's grace,
// so it takes up to this.
const maxResumeTokenLifetime = 10 * time.Minute

// resume answers POST .../resume: a client whose map pod went away (a
// crash, a drain) asks where the map runs now, showing a resume token of
// the room, which proves it played there. The token is only read, not
// spent: the map spends it when the client says hello with it.
func (h *Handler) resume(r *http.Request) (int, any, error) {
	var req ResumeRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.ResumeToken == "" {
		return 0, nil, fail(CodeBadRequest, "resumeToken is required")
	}
	ctx := r.Context()
	room, keys, err := h.roomAndKeys(ctx, r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	claims, err := token.NewVerifier(token.StaticKeys(keys), h.clock).Verify(req.ResumeToken,
		token.Expect{Room: room.Name, AnyMap: true, Types: []string{token.TypeResume}, MaxLifetime: maxResumeTokenLifetime})
	switch {
	case errors.Is(err, token.ErrExpired):
		return 0, nil, fail(CodeUnauthorized, "the resume token expired: join again").because(err)
	case err != nil:
		return 0, nil, fail(CodeUnauthorized, "the resume token is not valid for this room").because(err)
	}
	mi, err := h.instanceOf(ctx, room, claims.Map)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, ResumeResponse{Endpoint: mi.Status.Endpoint, Map: mi.Spec.MapName, Instance: mi.Name}, nil
}
