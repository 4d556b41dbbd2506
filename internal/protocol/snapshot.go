package protocol

// EntityKind says what an entity is.
type EntityKind uint8

// Entity kinds.
const (
	EntityPlayer EntityKind = 1
	EntityNPC    EntityKind = 2
	EntityLoot   EntityKind = 3
	EntityDoor   EntityKind = 4
	EntityPortal EntityKind = 5
)

// EntityState is what a client sees of one entity. Snapshots list them
// sorted by ID.
type EntityState struct {
	ID   uint32     `json:"id"`
	Kind EntityKind `json:"kind"`
	X    float32    `json:"x"`
	Y    float32    `json:"y"`
	HP   uint8      `json:"hp"`
}

// WireState is an entity as the server sends it: its position quantized
// to the 1/PositionScale grid both codecs carry (Quantize). The server
// quantizes each entity once a frame and compares and encodes these for
// every client; 12 bytes where an EntityState takes 20.
type WireState struct {
	ID   uint32
	X, Y uint16
	Kind EntityKind
	HP   uint8
}

// Wire returns what the server sends of e.
func (e EntityState) Wire() WireState {
	return WireState{ID: e.ID, Kind: e.Kind, X: Quantize(e.X), Y: Quantize(e.Y), HP: e.HP}
}

// State returns the entity a client decodes from w.
func (w WireState) State() EntityState {
	return EntityState{ID: w.ID, Kind: w.Kind, X: Dequantize(w.X), Y: Dequantize(w.Y), HP: w.HP}
}

// Snapshot modes.
const (
	ModeFull  = "full"
	ModeDelta = "delta"
)

// Snapshot is the JSON snapshot: the entities inside the player's area of
// interest, split into feature channels.
type Snapshot struct {
	Tick   uint64 `json:"tick"`
	AckSeq uint32 `json:"ackSeq"`
	Mode   string `json:"mode"`
	// BaseTick is the snapshot a delta applies to.
	BaseTick uint64 `json:"baseTick,omitempty"`
	// Presence: entities that entered (with their kind) or left the area.
	Presence Presence `json:"presence"`
	// Movement: positions of entities that moved (all of them in full mode).
	Movement []Position `json:"movement,omitempty"`
	// Combat: hit points that changed.
	Combat []Health `json:"combat,omitempty"`
}

// Presence lists arrivals and departures.
type Presence struct {
	Add    []Arrival `json:"add,omitempty"`
	Remove []uint32  `json:"remove,omitempty"`
}

// Arrival is an entity that came into view.
type Arrival struct {
	ID   uint32     `json:"id"`
	Kind EntityKind `json:"kind"`
}

// Position is one entity's position.
type Position struct {
	ID uint32  `json:"id"`
	X  float32 `json:"x"`
	Y  float32 `json:"y"`
}

// Health is one entity's hit points.
type Health struct {
	ID uint32 `json:"id"`
	HP uint8  `json:"hp"`
}
