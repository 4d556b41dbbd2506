package joinapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// maxNameRunes bounds a character's name.
const maxNameRunes = 32

// listCharacters answers GET .../characters.
func (h *Handler) listCharacters(r *http.Request) (int, any, error) {
	user, accounts, err := h.account(r)
	if err != nil {
		return 0, nil, err
	}
	list, err := accounts.ListCharacters(r.Context(), user)
	if err != nil {
		return 0, nil, err
	}
	out := CharacterList{Characters: make([]Character, 0, len(list))}
	for _, c := range list {
		out.Characters = append(out.Characters, view(c))
	}
	return http.StatusOK, out, nil
}

// createCharacter answers POST .../characters with 201 and the character.
func (h *Handler) createCharacter(r *http.Request) (int, any, error) {
	var req CreateCharacterRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	name, err := characterName(req.Name)
	if err != nil {
		return 0, nil, err
	}
	user, accounts, err := h.account(r)
	if err != nil {
		return 0, nil, err
	}
	c, err := h.underCap(r.Context(), accounts, func() (store.Character, error) {
		return accounts.CreateCharacter(r.Context(), user, name, req.Active)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, view(c), nil
}

// getCharacter answers GET .../characters/{id}.
func (h *Handler) getCharacter(r *http.Request) (int, any, error) {
	user, accounts, err := h.account(r)
	if err != nil {
		return 0, nil, err
	}
	id, err := pathCharacterID(r)
	if err != nil {
		return 0, nil, err
	}
	c, err := accounts.CharacterOf(r.Context(), user, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, view(c), nil
}

// deleteCharacter answers DELETE .../characters/{id} with 204. The items
// it held of the kinds the room's packs keep by a critical-item policy
// are released to their maps, which bring them back.
func (h *Handler) deleteCharacter(r *http.Request) (int, any, error) {
	user, accounts, err := h.account(r)
	if err != nil {
		return 0, nil, err
	}
	id, err := pathCharacterID(r)
	if err != nil {
		return 0, nil, err
	}
	room, err := h.room(r.Context(), r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	critical, err := h.criticalKinds(r.Context(), room)
	if err != nil {
		return 0, nil, err
	}
	if err := accounts.DeleteCharacter(r.Context(), user, id, critical); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// criticalKinds are the item kinds the packs of the room's maps keep by a
// critical-item policy: the packs are the policies' one source.
func (h *Handler) criticalKinds(ctx context.Context, room *gamev1.GameRoom) ([]string, error) {
	var kinds []string
	for _, m := range room.Spec.Maps {
		pack, ok, err := h.definitions(ctx, room.Namespace, m.Config)
		if err != nil {
			return nil, err
		}
		for _, it := range pack.defs.Items {
			if ok && it.Critical && !slices.Contains(kinds, it.Kind) {
				kinds = append(kinds, it.Kind)
			}
		}
	}
	return kinds, nil
}

// pathCharacterID is the {id} of a characters path, if it can be one.
func pathCharacterID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if id == "" || !safeID(id, maxCharacterIDBytes) {
		return "", errCharacterID()
	}
	return id, nil
}

// account is the caller's user id, from the bearer authKey, and the
// accounts of the room's database. The key is checked first, so callers
// without one learn nothing about rooms.
func (h *Handler) account(r *http.Request) (string, Accounts, error) {
	key, err := bearerKey(r)
	if err != nil {
		return "", nil, err
	}
	room, err := h.room(r.Context(), r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return "", nil, err
	}
	accounts, err := h.accounts(r.Context(), room)
	if err != nil {
		return "", nil, err
	}
	return UserID(key), accounts, nil
}

// accounts are the characters of the room's database.
func (h *Handler) accounts(ctx context.Context, room *gamev1.GameRoom) (Accounts, error) {
	if room.Spec.Database == nil {
		return nil, fail(CodeBadRequest, "this room has no database, so it keeps no characters: join without an authKey")
	}
	dsn, err := h.roomDSN(ctx, room)
	if err != nil {
		return nil, err
	}
	return h.dbs.get(ctx, dsn)
}

// characterName trims name and refuses empty, over-long or unprintable ones.
func characterName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "" || !utf8.ValidString(name):
		return "", fail(CodeBadRequest, "name must be 1 to %d printable characters", maxNameRunes)
	case utf8.RuneCountInString(name) > maxNameRunes:
		return "", fail(CodeBadRequest, "name is longer than %d characters", maxNameRunes)
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return "", fail(CodeBadRequest, "name must be 1 to %d printable characters", maxNameRunes)
	}
	return name, nil
}

// view is what the API shows of a stored character: not its user id.
func view(c store.Character) Character {
	return Character{ID: c.ID, Name: c.Name, Active: c.Active, CreatedAt: c.CreatedAt.UTC()}
}
