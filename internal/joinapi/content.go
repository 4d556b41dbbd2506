package joinapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// cacheable is a body its endpoint names by etag: serve answers a request
// that has it already with 304 and no body.
type cacheable struct {
	etag string
	body any
}

// content answers the room's content definitions.
func (h *Handler) content(r *http.Request) (int, any, error) {
	room, err := h.room(r.Context(), r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	out := protocol.RoomContent{Maps: map[string]string{}, Packs: map[string]protocol.PackDefinitions{}, Hashes: map[string]string{}}
	for _, m := range room.Spec.Maps {
		pack := content.ForMap(m.Config.Content, string(m.Config.Biome))
		out.Maps[m.Name] = pack.Name
		if _, ok := out.Packs[pack.Name]; !ok {
			out.Packs[pack.Name] = pack.Definitions()
			out.Hashes[pack.Name] = out.Packs[pack.Name].Hash()
		}
	}
	data, err := json.Marshal(struct {
		Maps  map[string]string                   `json:"maps"`
		Packs map[string]protocol.PackDefinitions `json:"packs"`
	}{out.Maps, out.Packs}) // maps marshal sorted by key: one room, one hash
	if err != nil {
		return 0, nil, err
	}
	sum := sha256.Sum256(data)
	out.Hash = hex.EncodeToString(sum[:])
	return http.StatusOK, cacheable{etag: `"` + out.Hash + `"`, body: out}, nil
}

// writeCacheable sends c unless the request's If-None-Match names its
// ETag already: then 304. Caches may keep it, asking again each time
// (no-cache): definitions are not secrets, unlike tickets.
func writeCacheable(w http.ResponseWriter, r *http.Request, status int, c cacheable) int {
	w.Header().Set("ETag", c.etag)
	for _, tag := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/"); tag == c.etag || tag == "*" {
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
	}
	writeBody(w, status, "no-cache", c.body)
	return status
}
