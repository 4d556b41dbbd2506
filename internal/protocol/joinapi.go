package protocol

import "time"

// The join API's wire format (docs/joinapi.md): the bodies the manager's
// join API takes and answers. The server (internal/joinapi), the Go client
// (pkg/client) and the room server's client of the destination route
// (internal/directory) all use these, so that none of them can drift from
// the others.

// JoinRequest is the body of a join. Every field is optional: an empty
// body joins the room's default map as a guest.
type JoinRequest struct {
	// AuthKey is the player's secret; without it the player is a guest.
	AuthKey string `json:"authKey,omitempty"`
	// CharacterID picks one of the player's characters; without it the
	// active one plays. Needs an AuthKey.
	CharacterID string `json:"characterId,omitempty"`
	// Map is the non-instanced map to join; without it the room's defaultMap.
	Map string `json:"map,omitempty"`
	// Instance asks for one shard of the map, by its MapInstance name (as
	// a friend's welcome names it); without it the join API chooses. A
	// full shard asked for is room_full, not another shard.
	Instance string `json:"instance,omitempty"`
	// PartyToken joins the player to a party (a party token from
	// creating one, or from its leader's invitation): players of one
	// party who enter an instanced map share one copy of it. Without it
	// the player is in no party and enters instanced maps alone.
	PartyToken string `json:"partyToken,omitempty"`
	// Party, when set, must be the party PartyToken is for; a party
	// without its token is refused (unauthorized).
	Party string `json:"party,omitempty"`
}

// CreatePartyRequest is the body of a party's creation: without an
// AuthKey a guest leads the party.
type CreatePartyRequest struct {
	// AuthKey is the leader's secret; the party's leader is its user.
	AuthKey string `json:"authKey,omitempty"`
	// Namespace and Room name the party's room, as POST /v1/parties needs
	// them; on the room's own path they are optional and must match it.
	Namespace string `json:"namespace,omitempty"`
	Room      string `json:"room,omitempty"`
}

// Party is a party token and what it says: the answer to creating a party
// (the leader's token) and to inviting a member (a member's token).
type Party struct {
	// Party is the party's id, made by the join API.
	Party string `json:"party"`
	// Token is the party token, signed with the room's key: joins with it
	// (partyToken) are the party's. Keep it secret: whoever holds it
	// joins the party.
	Token string `json:"token"`
	// Role is the token's: leader (it may invite) or member.
	Role string `json:"role"`
	// Leader is the user id of the party's leader.
	Leader string `json:"leader"`
	// MaxSize is how many of the party play one instanced map together
	// (the room's parties.maxSize).
	MaxSize int32 `json:"maxSize"`
	// ExpiresAt is when the token expires, RFC 3339: the party lasts as
	// long as its leader's token.
	ExpiresAt time.Time `json:"expiresAt"`
}

// JoinResponse is the answer to a join: where to connect and the ticket to
// say hello with.
type JoinResponse struct {
	// Endpoint is the map's WebSocket URL.
	Endpoint string `json:"endpoint"`
	// Map is the name of the map joined (in the room's spec).
	Map string `json:"map"`
	// Ticket is the signed join ticket, valid once until ExpiresAt.
	Ticket string `json:"ticket"`
	// ExpiresAt is when the ticket expires, RFC 3339.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Character is one of a player's characters, as the join API shows it.
type Character struct {
	// ID is the character's id, the characterId of a join.
	ID string `json:"id"`
	// Name is the name the player gave it.
	Name string `json:"name"`
	// Active marks the character a join without characterId plays.
	Active bool `json:"active"`
	// CreatedAt is when it was created, RFC 3339.
	CreatedAt time.Time `json:"createdAt"`
}

// CharacterList is the answer to listing a user's characters.
type CharacterList struct {
	// Characters are the user's characters, oldest first; at most one is active.
	Characters []Character `json:"characters"`
}

// RoomList is a page of the lobby: the rooms a listing matched, sorted by
// namespace and name.
type RoomList struct {
	Rooms []RoomSummary `json:"rooms"`
	// Continue, when set, asks for the next page (the continue query
	// parameter); the last page has none.
	Continue string `json:"continue,omitempty"`
}

// RoomSummary is what the lobby shows of one room: its maps, the
// instances serving them and their players.
type RoomSummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Labels are the room's labels, as the platform team set them (the
	// lobby's labelSelector filters by them: mode, region, ...).
	Labels map[string]string `json:"labels,omitempty"`
	// Phase is the room's phase (Pending, Starting, Running, Degraded).
	Phase string `json:"phase"`
	// DefaultMap is where a join lands; Joinable says whether it has a
	// Ready instance now.
	DefaultMap string `json:"defaultMap"`
	Joinable   bool   `json:"joinable"`
	// Players are connected across the room's maps; Capacity is the seats
	// of its shared maps' running shards (instanced maps are entered
	// through portals).
	Players  int32        `json:"players"`
	Capacity int32        `json:"capacity"`
	Maps     []MapSummary `json:"maps"`
}

// MapSummary is one map of a room in the lobby.
type MapSummary struct {
	Name string `json:"name"`
	// Instanced maps get an instance per party, entered through portals.
	Instanced bool `json:"instanced,omitempty"`
	// Players are connected to its instances; Capacity is the seats of
	// one instance (the room's maxPlayersPerMap; for an instanced map's
	// party instance, no more than parties.maxSize).
	Players  int32 `json:"players"`
	Capacity int32 `json:"capacity"`
	// Shards of a shared map: how many run now, and the most it may
	// have (spec.maps[].shards.max); 0 for an instanced map.
	Shards    int32 `json:"shards,omitempty"`
	MaxShards int32 `json:"maxShards,omitempty"`
	// Instances are the MapInstances serving it: a shared map's shards,
	// an instanced map's party copies.
	Instances []InstanceSummary `json:"instances,omitempty"`
}

// InstanceSummary is one MapInstance in the lobby.
type InstanceSummary struct {
	Name    string `json:"name"`
	Phase   string `json:"phase,omitempty"`
	Players int32  `json:"players"`
	// Shard is a shared map's shard number (1 for <room>-<map>): a join
	// may ask for this instance by Name.
	Shard int32 `json:"shard,omitempty"`
}

// CreateCharacterRequest is the body of a character creation.
type CreateCharacterRequest struct {
	// Name is 1 to 32 printable characters.
	Name string `json:"name"`
	// Active makes the new character the active one. A user's first
	// character is active anyway.
	Active bool `json:"active,omitempty"`
}

// DestinationRequest is the body of a destination request: a map pod
// asking where a portal leads.
type DestinationRequest struct {
	// Map is the destination map's name in the room's spec.
	Map string `json:"map"`
	// Party is the player's party, optional; when set it must equal the
	// token's pty claim.
	Party string `json:"party,omitempty"`
}

// Destination is the answer to a destination request: where a portal
// leads for this player.
type Destination struct {
	// Map is the destination map's name in the room's spec.
	Map string `json:"map"`
	// Instance is the MapInstance that runs it for this player: the
	// token for the player's transfer names it.
	Instance string `json:"instance"`
	// Endpoint is the MapInstance's WebSocket URL.
	Endpoint string `json:"endpoint"`
}

// APIErrorBody is the JSON body of every error answer of the join API; C
// is the string type its user keeps the codes in.
type APIErrorBody[C ~string] struct {
	Code    C      `json:"code"`
	Message string `json:"message"`
	// RetryAfter is in whole seconds, for map_quarantined and rate_limited;
	// the Retry-After header says the same.
	RetryAfter int `json:"retryAfter,omitempty"`
}
