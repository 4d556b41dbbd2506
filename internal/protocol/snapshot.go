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
	// State is a player's or an NPC's combat state (CombatIdle, ...; the
	// low two bits, CombatMask) with its effect bits (Strengthened,
	// Weakened), or a door's bits (DoorOpen, DoorLocked).
	State uint8 `json:"state,omitempty"`
	// Target is whom a player or an NPC fights, 0 for nobody.
	Target uint32 `json:"target,omitempty"`
}

// Combat states of players and NPCs (EntityState.State).
const (
	CombatIdle      uint8 = 0
	CombatFighting  uint8 = 1
	CombatDead      uint8 = 2
	CombatReturning uint8 = 3
	// CombatMask is the bits of a combatant's State that are its combat
	// state; the bits above are its effects.
	CombatMask uint8 = 3
)

// Effect bits of a player's or an NPC's State, above its combat state:
// what others see of the abilities' buffs and debuffs on it (the owner
// sees its own buffs in full in its inventory channel).
const (
	// Strengthened: an ability's buff is on it.
	Strengthened uint8 = 1 << 2
	// Weakened: an ability's debuff is on it.
	Weakened uint8 = 1 << 3
)

// Door state bits (EntityState.State of a door).
const (
	DoorOpen   uint8 = 1
	DoorLocked uint8 = 2
)

// WireState is an entity as the server sends it: its position quantized
// to the 1/PositionScale grid both codecs carry (Quantize). The server
// quantizes each entity once a frame and compares and encodes these for
// every client; 12 bytes where an EntityState takes 20.
type WireState struct {
	ID     uint32
	X, Y   uint16
	Kind   EntityKind
	HP     uint8
	State  uint8
	Target uint32
}

// Wire returns what the server sends of e.
func (e EntityState) Wire() WireState {
	return WireState{ID: e.ID, Kind: e.Kind, X: Quantize(e.X), Y: Quantize(e.Y), HP: e.HP, State: e.State, Target: e.Target}
}

// Entity returns the entity a client decodes from w.
func (w WireState) Entity() EntityState {
	return EntityState{ID: w.ID, Kind: w.Kind, X: Dequantize(w.X), Y: Dequantize(w.Y), HP: w.HP, State: w.State, Target: w.Target}
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
	// Combat: hit points, combat state and target of players and NPCs
	// that changed.
	Combat []Health `json:"combat,omitempty"`
	// Doors: doors that opened, closed or were unlocked.
	Doors []DoorView `json:"doors,omitempty"`
	// Inventory is the receiving player's own inventory, equipment and
	// skills, whole: in a full snapshot, and in a delta when they changed
	// since the snapshot before. Nobody else's is ever sent.
	Inventory *Inventory `json:"inventory,omitempty"`
}

// Inventory is the inventory channel: what a player carries and wears,
// their weight, and its skills.
type Inventory struct {
	// Items are the bag's items (no slot) and the worn ones (their slot).
	Items []ItemView `json:"items"`
	// Weight is everything carried and worn; above the welcome's
	// bag.encumberedAt the player walks at bag.encumberedSpeed.
	Weight float32     `json:"weight"`
	Skills []SkillView `json:"skills"`
	// Resources are the player's pools (absent when the pack has none);
	// Buffs the buffs on it; Cooldowns its abilities that cannot be cast
	// again before a tick.
	Resources *ResourcesView `json:"resources,omitempty"`
	Buffs     []BuffView     `json:"buffs,omitempty"`
	Cooldowns []CooldownView `json:"cooldowns,omitempty"`
}

// ResourcesView is a player's pools and their most.
type ResourcesView struct {
	Mana       int `json:"mana"`
	ManaMax    int `json:"manaMax"`
	Stamina    int `json:"stamina"`
	StaminaMax int `json:"staminaMax"`
}

// BuffView is a buff on the player: the ability's, what it adds, and the
// tick it ends.
type BuffView struct {
	Ability string `json:"ability"`
	Attack  int    `json:"attack,omitempty"`
	Defence int    `json:"defence,omitempty"`
	Until   uint64 `json:"until"`
}

// CooldownView is an ability that can be cast again at tick Ready.
type CooldownView struct {
	Ability string `json:"ability"`
	Ready   uint64 `json:"ready"`
}

// SkillView is a player's standing in one skill.
type SkillView struct {
	Name  string `json:"name"`
	Level int    `json:"level"`
	XP    int    `json:"xp"`
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

// Health is one fighter's hit points, state and target.
type Health struct {
	ID     uint32 `json:"id"`
	HP     uint8  `json:"hp"`
	State  uint8  `json:"state,omitempty"`
	Target uint32 `json:"target,omitempty"`
}

// DoorView is one door's state.
type DoorView struct {
	ID     uint32 `json:"id"`
	Open   bool   `json:"open"`
	Locked bool   `json:"locked,omitempty"`
}

// Channel puts e's extra fields (fields.go) into the JSON channel they
// travel in: a door's state into doors, a fighter's into combat; other
// kinds have hit points only.
func (s *Snapshot) Channel(e WireState) {
	if e.Kind == EntityDoor {
		s.Doors = append(s.Doors, DoorView{ID: e.ID, Open: e.State&DoorOpen != 0, Locked: e.State&DoorLocked != 0})
		return
	}
	s.Combat = append(s.Combat, Health{ID: e.ID, HP: e.HP, State: e.State, Target: e.Target})
}
