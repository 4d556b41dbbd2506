package joinapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/packs"
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
		pack, ok, err := h.definitions(r.Context(), room.Namespace, m.Config)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			continue // its pack is missing or was never valid: the map does not run
		}
		out.Maps[m.Name] = pack.defs.Name
		out.Packs[pack.defs.Name], out.Hashes[pack.defs.Name] = pack.defs, pack.hash
	}
	// The packs' hashes stand for the packs: the answer's hash changes
	// with any of them, and no pack is encoded again for it.
	data, err := json.Marshal(struct {
		Maps   map[string]string `json:"maps"`
		Hashes map[string]string `json:"hashes"`
	}{out.Maps, out.Hashes}) // maps marshal sorted by key: one room, one hash
	if err != nil {
		return 0, nil, err
	}
	sum := sha256.Sum256(data)
	out.Hash = hex.EncodeToString(sum[:])
	return http.StatusOK, cacheable{etag: `"` + out.Hash + `"`, body: out}, nil
}

// definitions are those of the pack the map runs (internal/packs): a
// GameContent's valid revision, else a built-in pack; false when the
// map's pack is missing or has no valid revision.
func (h *Handler) definitions(ctx context.Context, namespace string, m gamev1.MapConfig) (servedPack, bool, error) {
	src, err := packs.Find(ctx, h.cached, namespace, m.Content)
	_, configMap := src.Revision()
	switch {
	case errors.Is(err, packs.ErrNotFound):
		return servedPack{}, false, nil
	case err != nil:
		return servedPack{}, false, err
	case src.Content == nil:
		return h.packs.builtIn(m.Content, string(m.Biome)), true, nil
	case configMap == "":
		return servedPack{}, false, nil
	}
	served, err := h.packs.revision(ctx, h.cached, namespace, configMap)
	return served, err == nil, err
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
