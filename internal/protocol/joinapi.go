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
	// Party is the player's party: players of one party who enter an
	// instanced map share one copy of it. Anyone who knows the id joins the
	// party, so make it unguessable. Up to 64 letters, digits, '-' or '_'.
	Party string `json:"party,omitempty"`
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
