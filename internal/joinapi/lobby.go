package joinapi

import (
	"cmp"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// The lobby (docs/joinapi.md): the rooms players can choose from, with
// their maps, instances, players and seats. Every answer is read from the
// manager's informer cache, so a busy lobby costs the API server nothing;
// the platform team's labels filter it (labelSelector), and it comes in
// pages.

// Lobby pages: a page holds limit rooms, defaultLobbyPage unless asked.
const (
	defaultLobbyPage = 50
	maxLobbyPage     = 200
)

// lobbyQuery is what a lobby request asks for.
type lobbyQuery struct {
	selector labels.Selector
	limit    int
	// after is the sort key of the last room of the previous page.
	after string
}

// listRooms answers a page of the rooms of the path's namespace, or of
// every namespace on the cluster-wide route.
func (h *Handler) listRooms(r *http.Request) (int, any, error) {
	q, err := lobbyQueryOf(r)
	if err != nil {
		return 0, nil, err
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: q.selector}}
	if ns := r.PathValue("ns"); ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	var list gamev1.GameRoomList
	if err := h.cached.List(r.Context(), &list, opts...); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, lobbyPage(list.Items, q), nil
}

// lobbyQueryOf reads the query: labelSelector (the Kubernetes syntax),
// limit (1 to maxLobbyPage) and continue (a token an earlier page gave).
func lobbyQueryOf(r *http.Request) (lobbyQuery, error) {
	v := r.URL.Query()
	selector, err := labels.Parse(v.Get("labelSelector"))
	if err != nil {
		return lobbyQuery{}, fail(CodeBadRequest, "labelSelector: %v", err)
	}
	q := lobbyQuery{selector: selector, limit: defaultLobbyPage}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLobbyPage {
			return lobbyQuery{}, fail(CodeBadRequest, "limit: %q is not a number from 1 to %d", s, maxLobbyPage)
		}
		q.limit = n
	}
	if c := v.Get("continue"); c != "" {
		after, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || !strings.Contains(string(after), "\x00") {
			return lobbyQuery{}, fail(CodeBadRequest, "continue: not a token this lobby gave")
		}
		q.after = string(after)
	}
	return q, nil
}

// lobbyPage is the page of rooms q asks for, sorted by namespace and name,
// with a continue token when more follow. Rooms being deleted are left
// out.
func lobbyPage(rooms []gamev1.GameRoom, q lobbyQuery) protocol.RoomList {
	slices.SortFunc(rooms, func(a, b gamev1.GameRoom) int { return cmp.Compare(roomKey(&a), roomKey(&b)) })
	out := protocol.RoomList{Rooms: []protocol.RoomSummary{}}
	for i := range rooms {
		room := &rooms[i]
		if room.DeletionTimestamp != nil || roomKey(room) <= q.after {
			continue
		}
		if len(out.Rooms) == q.limit {
			last := out.Rooms[q.limit-1]
			out.Continue = base64.RawURLEncoding.EncodeToString([]byte(last.Namespace + "\x00" + last.Name))
			break
		}
		out.Rooms = append(out.Rooms, summarize(room))
	}
	return out
}

// roomKey sorts rooms by namespace, then name (NUL sorts before any
// character a name may have).
func roomKey(room *gamev1.GameRoom) string { return room.Namespace + "\x00" + room.Name }

// summarize is what the lobby shows of a room, from its spec and the
// operator's status: no endpoint (players get one with their ticket).
func summarize(room *gamev1.GameRoom) protocol.RoomSummary {
	s := protocol.RoomSummary{Namespace: room.Namespace, Name: room.Name, Labels: room.Labels, Phase: string(room.Status.Phase),
		DefaultMap: room.Spec.DefaultMap, Players: room.Status.Players, Maps: []protocol.MapSummary{}}
	for _, m := range room.Spec.Maps {
		seats := room.Spec.Seats(m.Instanced)
		ms := protocol.MapSummary{Name: m.Name, Instanced: m.Instanced, Capacity: seats}
		for _, e := range room.Status.Maps {
			if e.Name != m.Name {
				continue
			}
			ms.Players += e.Players
			ms.Instances = append(ms.Instances, protocol.InstanceSummary{Name: e.Instance, Phase: string(e.Phase), Players: e.Players, Shard: e.Shard})
			s.Joinable = s.Joinable || (m.Name == room.Spec.DefaultMap && e.Phase == gamev1.MapReady)
		}
		if !m.Instanced {
			_, ms.MaxShards = m.ShardBounds()
			ms.Shards = int32(len(ms.Instances))
			s.Capacity += seats * max(1, ms.Shards)
		}
		s.Maps = append(s.Maps, ms)
	}
	return s
}
