// Package store is the room server's persistence: the Store interface the
// server uses, and its Postgres implementation (lib/pq on database/sql)
// with embedded migrations. docs/design.md section 6 is the contract.
package store

import (
	"context"
	"errors"
	"time"
)

// Errors callers branch on, for errors.Is.
var (
	// ErrNotFound: no such character, state or item.
	ErrNotFound = errors.New("not found")
	// ErrNotOwner: the character belongs to another user.
	ErrNotOwner = errors.New("character belongs to another user")
	// ErrReplayed: the token id was consumed before.
	ErrReplayed = errors.New("token already used")
	// ErrLeaseHeld: another map holds the character's unexpired authority lease.
	ErrLeaseHeld = errors.New("character is active in another map")
	// ErrLeaseLost: the lease this map holds was taken over (expired and claimed elsewhere).
	ErrLeaseLost = errors.New("authority lease lost")
	// ErrSessionEnded: a resume names a lease epoch another claim has
	// replaced (the character joined again, or was resumed elsewhere).
	ErrSessionEnded = errors.New("the session was resumed or replaced")
	// ErrItemTaken: the item is not where the action expected it (someone else has it).
	ErrItemTaken = errors.New("item is not where expected")
	// ErrUnavailable wraps every failure to reach the database, so callers
	// answer persistence_unavailable and retry later.
	ErrUnavailable = errors.New("persistence unavailable")
	// ErrCommitUnknown: the transaction's COMMIT was sent and no answer
	// came (the connection broke, or the context ended while it was on the
	// wire), so it may have committed or not. It is also ErrUnavailable.
	// Only a write that is safe to repeat can find out, by running again:
	// a critical action under its event id (CommitCritical) does.
	ErrCommitUnknown = errors.New("the commit was sent and its outcome is unknown")
	// ErrCorrupt: a stored state's hash does not match its payload.
	ErrCorrupt = errors.New("stored state is corrupt: hash does not match payload")
	// ErrUnknownSchema: a stored state has a schema version this code does not know.
	ErrUnknownSchema = errors.New("stored state has an unknown schema version")
	// ErrUnknownSimCore: a stored state was made by a simulation core this
	// code does not know (a newer release): it is refused, not guessed at.
	ErrUnknownSimCore = errors.New("stored state was made by an unknown simulation core version")
)

// CharacterState is the latest snapshot of one character's persistent
// state. Payload is opaque to the store; StateHash is the hex SHA-256 of
// Payload, checked on load.
type CharacterState struct {
	CharacterID    string
	SchemaVersion  int
	SimCoreVersion string
	Revision       int64
	SavedTick      int64
	Payload        []byte
	StateHash      string
	UpdatedAt      time.Time
	// Epoch is the authority lease epoch the state was made under: it is
	// written only while the saving map still holds that lease. Not stored.
	Epoch int64
}

// Lease is a character's authority: it is simulated in at most one map.
type Lease struct {
	CharacterID string
	MapInstance string
	Pod         string
	Epoch       int64
	ExpiresAt   time.Time
	InTransfer  bool
}

// Owner kinds of an item.
const (
	OwnerCharacter = "character"
	OwnerMap       = "map"
)

// Item is where one item is: held by a character, or lying on a map.
type Item struct {
	ItemID    string
	Kind      string
	OwnerKind string // OwnerCharacter or OwnerMap
	OwnerID   string // character id, or map instance name
	// Slot is where a character wears it ("" in the bag, and on a map).
	Slot      string
	X, Y      float32
	Revision  int64
	UpdatedAt time.Time
}

// CriticalEvent is one acknowledged critical action, append-only. EventID
// is the idempotency key: committing the same event twice is a no-op.
type CriticalEvent struct {
	EventID string
	// Seq orders a character's events (read back only).
	Seq         int64
	CharacterID string
	MapInstance string
	Kind        string // e.g. loot.pickup, inventory.drop
	ItemID      string
	Tick        int64
	Payload     []byte
	CreatedAt   time.Time
	// Moves are what the event moved, as recorded (read back only; nil
	// for events from before moves were recorded).
	Moves []MoveRecord
	// Epoch is the authority lease epoch of the acting map: the event
	// commits only while MapInstance still holds the character's lease
	// with it (else ErrLeaseLost). Not stored.
	Epoch int64
	// State, when set, is the acting character's state as the action
	// leaves it (a potion's heal), written in the event's transaction like
	// a checkpoint (SaveStates): the action and its effect on the
	// character commit together or not at all.
	State *CharacterState
}

// Move is an ownership change a critical event makes: the item goes from
// (FromKind, FromID, FromSlot) to To. It commits only if the item is still at From
// (or, for an item never stored before, if From is the map and the item is
// new), else ErrItemTaken.
type Move struct {
	FromKind, FromID string
	// FromSlot is the slot the holder wears it in, "" for the bag.
	FromSlot string
	To       Item
}

// SaveResult says what a checkpoint batch did.
type SaveResult struct {
	Saved int // rows written
	Stale int // skipped: the stored revision was newer or equal
}

// Store is what the room server persists through. Every method is safe for
// concurrent use; database failures are wrapped in ErrUnavailable.
type Store interface {
	// EnsureCharacter creates the character for userID if it is new and
	// returns ErrNotOwner if it belongs to someone else.
	EnsureCharacter(ctx context.Context, characterID, userID string) error

	// ConsumeToken records a ticket id until exp; the second time it
	// returns ErrReplayed. PruneTokens deletes ids expired before now.
	ConsumeToken(ctx context.Context, jti string, exp time.Time) error
	PruneTokens(ctx context.Context, now time.Time) (int64, error)

	// ClaimLease makes mapInstance/pod authoritative for the character until
	// now+ttl with a new epoch, unless another map holds an unexpired lease
	// (ErrLeaseHeld). RenewLeases extends the leases this map holds
	// (ErrLeaseLost if any was taken over); ReleaseLease ends one if this
	// map still holds it with that epoch.
	ClaimLease(ctx context.Context, characterID, mapInstance, pod string, ttl time.Duration, now time.Time) (Lease, error)
	// ResumeLease is ClaimLease for a resumed session: it takes the lease
	// only while it is still the session's (this map, epoch, not in
	// transfer; expired or not), or when there is none, and otherwise
	// returns ErrSessionEnded.
	ResumeLease(ctx context.Context, characterID, mapInstance, pod string, epoch int64, ttl time.Duration, now time.Time) (Lease, error)
	RenewLeases(ctx context.Context, mapInstance string, leases []Lease, ttl time.Duration, now time.Time) error
	ReleaseLease(ctx context.Context, lease Lease) error

	// LoadState returns the character's latest state, ErrNotFound for a new
	// character, ErrCorrupt when the hash does not match.
	LoadState(ctx context.Context, characterID string) (CharacterState, error)
	// SaveStates writes a checkpoint batch in one transaction. A state whose
	// revision is not newer than the stored one is skipped (idempotent, and
	// an old revision never overwrites a new one). It records one
	// checkpoint_audit row for the batch.
	SaveStates(ctx context.Context, mapInstance string, states []CharacterState) (SaveResult, error)

	// CommitCritical appends the event and applies the moves, in order, in
	// one transaction. Committing an event id already stored returns nil
	// and changes nothing.
	CommitCritical(ctx context.Context, ev CriticalEvent, moves ...Move) error
	// ItemsOf lists the items a character holds; ItemsOn the items lying on
	// a map instance.
	ItemsOf(ctx context.Context, characterID string) ([]Item, error)
	ItemsOn(ctx context.Context, mapInstance string) ([]Item, error)
	// EventsOf lists a character's critical events, oldest first.
	EventsOf(ctx context.Context, characterID string) ([]CriticalEvent, error)

	// BeginTransfer, AdvanceTransfer, CompleteTransfers, ArriveByTransfer(s),
	// AbortTransfer, GetTransfer and ExpiredTransfers run a transfer's state machine
	// (transfers.go).
	BeginTransfer(ctx context.Context, t Transfer, checkpoint CharacterState) error
	BeginTransfers(ctx context.Context, ts []Transfer, checkpoints []CharacterState) error
	AdvanceTransfer(ctx context.Context, id string, from, to TransferState) error
	CompleteTransfers(ctx context.Context, ids []string) (int64, error)
	ArriveByTransfer(ctx context.Context, id, characterID, mapInstance, pod string, ttl time.Duration, now time.Time) (Arrival, error)
	ArriveByTransfers(ctx context.Context, reqs []ArrivalRequest, mapInstance, pod string, ttl time.Duration, now time.Time) ([]ArrivalResult, error)
	AbortTransfer(ctx context.Context, id, reason string) error
	GetTransfer(ctx context.Context, id string) (Transfer, error)
	ExpiredTransfers(ctx context.Context, fromInstance string, now time.Time) ([]Transfer, error)

	// Ping checks the database is reachable.
	Ping(ctx context.Context) error
	Close() error
}
