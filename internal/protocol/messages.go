// Package protocol defines the room server's wire protocol (docs/design.md
// section 4): the JSON envelope, its messages, the stable error codes, and
// the compact binary snapshot codec. docs/protocol.md documents it for
// client authors.
package protocol

import (
	"encoding/json"
	"slices"
)

// Protocol constants.
const (
	// Version is the envelope's "v".
	Version = 1
	// Subprotocol is the WebSocket subprotocol clients must offer.
	Subprotocol = "roomkeeper.v1"
	// MaxMessageBytes is the largest client message; a larger one closes the
	// connection with 1009 (message too big).
	MaxMessageBytes = 16 << 10
	// CodecJSON and CodecBinary are the snapshot codecs a client may ask for in hello.
	CodecJSON   = "json"
	CodecBinary = "binary"
)

// Kind is the envelope's "kind".
type Kind string

// Client -> server kinds.
const (
	KindHello   Kind = "hello"
	KindCommand Kind = "command"
	KindPing    Kind = "ping"
)

// Server -> client kinds.
const (
	KindWelcome  Kind = "welcome"
	KindAck      Kind = "ack"
	KindSnapshot Kind = "snapshot"
	KindEvent    Kind = "event"
	KindTransfer Kind = "transfer"
	KindError    Kind = "error"
	KindPong     Kind = "pong"
	KindSession  Kind = "session"
)

// Features and actions of commands.
const (
	FeatureMovement  = "movement"
	FeatureCombat    = "combat"
	FeatureLoot      = "loot"
	FeatureInventory = "inventory"
	FeatureDoor      = "door"
	FeaturePortal    = "portal"

	ActionInput   = "input"
	ActionAttack  = "attack"
	ActionCast    = "cast"
	ActionPickup  = "pickup"
	ActionEquip   = "equip"
	ActionUnequip = "unequip"
	ActionDrop    = "drop"
	ActionUse     = "use"
	ActionToggle  = "toggle"
	ActionEnter   = "enter"
)

// Command names one feature.action pair a client may send.
type Command struct {
	Feature, Action string
}

func (c Command) String() string { return c.Feature + "." + c.Action }

// commands is the closed set of commands: the one declaration the decoder
// checks envelopes against and the room server's handler table follows.
var commands = []Command{
	{FeatureMovement, ActionInput},
	{FeatureCombat, ActionAttack},
	{FeatureCombat, ActionCast},
	{FeatureLoot, ActionPickup},
	{FeatureInventory, ActionEquip},
	{FeatureInventory, ActionUnequip},
	{FeatureInventory, ActionDrop},
	{FeatureInventory, ActionUse},
	{FeatureDoor, ActionToggle},
	{FeaturePortal, ActionEnter},
}

// Commands returns every command a client may send.
func Commands() []Command {
	return slices.Clone(commands)
}

// Envelope is every JSON message, in both directions.
type Envelope struct {
	V       int    `json:"v"`
	Kind    Kind   `json:"kind"`
	Seq     uint32 `json:"seq,omitempty"`
	Feature string `json:"feature,omitempty"`
	Action  string `json:"action,omitempty"`
	// AckTick, on any client message, acknowledges the newest snapshot the
	// client has applied; binary snapshots are deltas against it.
	AckTick uint64          `json:"ackTick,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Hello is the first client message: a ticket for a new seat, or a resume
// token to take back a dropped one.
type Hello struct {
	Ticket  string `json:"ticket,omitempty"`
	Resume  string `json:"resume,omitempty"`
	LastSeq uint32 `json:"lastSeq,omitempty"`
	// LastEvent is, on a resume, the id of the last event received: the
	// events after it are sent again.
	LastEvent uint64 `json:"lastEvent,omitempty"`
	Codec     string `json:"codec,omitempty"`
}

// Session hands an attached client a fresh resume token, every third of
// its resume grace: the token in welcome expires with the grace.
type Session struct {
	ResumeToken string `json:"resumeToken"`
	// ExpiresAt is when the token expires, unix ms.
	ExpiresAt int64 `json:"expiresAt"`
}

// Welcome answers a good hello.
type Welcome struct {
	PlayerID     uint32 `json:"playerId"`
	Room         string `json:"room"`
	Map          string `json:"map"`
	Instance     string `json:"instance"`
	Tick         uint64 `json:"tick"`
	TickRate     int    `json:"tickRate"`
	SnapshotRate int    `json:"snapshotRate"`
	// PlayerSpeed is in world units per second; one movement input moves
	// the player PlayerSpeed/TickRate units, which clients replay to predict.
	PlayerSpeed float32         `json:"playerSpeed"`
	ResumeToken string          `json:"resumeToken"`
	Resumed     bool            `json:"resumed,omitempty"`
	LastSeq     uint32          `json:"lastSeq,omitempty"`
	Codec       string          `json:"codec"`
	MapConfig   json.RawMessage `json:"mapConfig"`
	MapHash     string          `json:"mapHash"`
	// ContentHash names the definitions of the map's content pack: the
	// join API serves them, by this hash, at GET .../content.
	ContentHash string `json:"contentHash"`
	// Inventory is what the player carries and wears.
	Inventory []ItemView `json:"inventory,omitempty"`
	// Bag is how much it can carry, and the encumbrance rule.
	Bag BagView `json:"bag"`
	// Portals are the map's portals: the entity to name in portal.enter,
	// where it leads, and how near a player must stand to enter it.
	Portals []PortalView `json:"portals,omitempty"`
	// Transfer is set when the player arrived through a portal (or came
	// back after one failed): the transfer's id.
	Transfer string `json:"transfer,omitempty"`
	// Party is the id of the party the player is in (its join's party
	// token's), which it shares instanced maps with; empty in none.
	Party string `json:"party,omitempty"`
}

// PortalView is a portal as a client sees it.
type PortalView struct {
	Entity uint32  `json:"entity"`
	To     string  `json:"to"`
	X      float32 `json:"x"`
	Y      float32 `json:"y"`
	Radius float32 `json:"radius"`
}

// CombatAttack is the payload of combat.attack: the entity to hit.
type CombatAttack struct {
	Target uint32 `json:"target"`
}

// CombatCast is the payload of combat.cast: an ability of the map's pack,
// and for an enemy ability the NPC to cast it at.
type CombatCast struct {
	Ability string `json:"ability"`
	Target  uint32 `json:"target,omitempty"`
}

// DoorToggle is the payload of door.toggle: the door entity to open or close.
type DoorToggle struct {
	Door uint32 `json:"door"`
}

// PortalEnter is the payload of portal.enter: the portal entity to walk through.
type PortalEnter struct {
	Portal uint32 `json:"portal"`
}

// ItemView is an item as a client sees it: in the bag, or worn in Slot.
type ItemView struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Slot string `json:"slot,omitempty"`
}

// InventoryEquip is the payload of inventory.equip: a bag item to wear in
// a slot (head, chest, hands, legs, feet, weapon, offhand). What the slot
// held goes into the bag.
type InventoryEquip struct {
	Item string `json:"item"`
	Slot string `json:"slot"`
}

// InventoryUnequip is the payload of inventory.unequip: the slot whose
// item goes back into the bag.
type InventoryUnequip struct {
	Slot string `json:"slot"`
}

// BagView is what a character can carry (content.Bag): the welcome sends
// it so a client predicts its speed with the server's rule.
type BagView struct {
	Capacity        int     `json:"capacity"`
	MaxWeight       float32 `json:"maxWeight"`
	EncumberedAt    float32 `json:"encumberedAt"`
	EncumberedSpeed float32 `json:"encumberedSpeed"`
}

// LootPickup is the payload of loot.pickup: the loot entity to take.
type LootPickup struct {
	Entity uint32 `json:"entity"`
}

// InventoryUse is the payload of inventory.use: the carried consumable to
// use up.
type InventoryUse struct {
	Item string `json:"item"`
}

// InventoryDrop is the payload of inventory.drop: the carried item to lay down.
type InventoryDrop struct {
	Item string `json:"item"`
}

// Ack answers one command by its seq. A critical action (loot pickup,
// drop, equip, unequip) is acked only after its database commit, with the
// inventory (bag and worn items) as it now stands.
type Ack struct {
	Seq       uint32     `json:"seq"`
	OK        bool       `json:"ok"`
	Code      Code       `json:"code,omitempty"`
	Message   string     `json:"message,omitempty"`
	Inventory []ItemView `json:"inventory,omitempty"`
}

// Error reports a problem that is not the answer to one command.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Ping carries the client's clock; Pong echoes it with the server's.
type Ping struct {
	ClientTime float64 `json:"clientTime"`
}

// Pong answers a ping.
type Pong struct {
	ClientTime float64 `json:"clientTime"`
	ServerTime int64   `json:"serverTime"` // unix milliseconds
}

// MovementInput is the payload of movement.input: one or more inputs, each
// a direction whose length is at most 1 (the server applies its own speed).
type MovementInput struct {
	Inputs []Input `json:"inputs"`
}

// Input is one movement intent.
type Input struct {
	Seq uint32  `json:"seq"`
	X   float32 `json:"x"`
	Y   float32 `json:"y"`
}

// Transfer tells a client to reconnect to another map: say hello there
// with Ticket. Should the destination refuse or not answer, the client
// says hello to the map it came from with ReturnTicket and plays on there.
type Transfer struct {
	Endpoint     string `json:"endpoint"`
	Ticket       string `json:"ticket"`
	Map          string `json:"map"`
	Instance     string `json:"instance"`
	ID           string `json:"id"`
	ReturnTicket string `json:"returnTicket"`
	// ExpiresAt is when Ticket expires, unix milliseconds.
	ExpiresAt int64 `json:"expiresAt"`
}

// Event types.
const (
	EventJoin           = "join"
	EventLeave          = "leave"
	EventDeath          = "death"
	EventLootRemoved    = "loot_removed"
	EventDoor           = "door"
	EventRoomCleared    = "room_cleared"
	EventBossPhase      = "boss_phase"
	EventServerShutdown = "server_shutdown"
	// EventSystemMessage is an operator's message to everyone on the map
	// (detail is the text; docs/operations.md, Moderation).
	EventSystemMessage = "system_message"
	// EventTransferred closes the connection of a player that went
	// through a portal: the transfer message came before it.
	EventTransferred = "transferred"
)

// Event is something that happened, sent to the clients it concerns.
type Event struct {
	// ID numbers the map's events 1, 2, ...; a client sees only those in
	// its area, so it sees gaps. A resuming client names the last it got.
	ID     uint64  `json:"id,omitempty"`
	Type   string  `json:"type"`
	Tick   uint64  `json:"tick"`
	Entity uint32  `json:"entity,omitempty"`
	X      float32 `json:"x,omitempty"`
	Y      float32 `json:"y,omitempty"`
	Detail string  `json:"detail,omitempty"`
	// By is who caused it: the killer of a death, who took the loot.
	By uint32 `json:"by,omitempty"`
	// Room is the room a room_cleared names (the map's room id).
	Room uint32 `json:"room,omitempty"`
	// Phase is the phase a boss entered, from 1 (boss_phase).
	Phase uint8 `json:"phase,omitempty"`
}
