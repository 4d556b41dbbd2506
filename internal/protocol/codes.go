package protocol

// Code is a stable error code. Clients switch on it; the message is for humans.
type Code string

// Error codes (docs/design.md section 4).
const (
	CodeBadRequest             Code = "bad_request"
	CodeUnauthorized           Code = "unauthorized"
	CodeTokenExpired           Code = "token_expired"
	CodeTokenReplayed          Code = "token_replayed"
	CodeWrongMap               Code = "wrong_map"
	CodeNotOwner               Code = "not_owner"
	CodeRoomFull               Code = "room_full"
	CodeRateLimited            Code = "rate_limited"
	CodeMapQuarantined         Code = "map_quarantined"
	CodePersistenceUnavailable Code = "persistence_unavailable"
	CodeInvalidAction          Code = "invalid_action"
	CodeCooldown               Code = "cooldown"
	CodeOutOfRange             Code = "out_of_range"
	CodeAlreadyTaken           Code = "already_taken"
	CodeInternal               Code = "internal"

	// Equipment and inventory (docs/protocol.md, Commands).
	CodeIllegalSlot   Code = "illegal_slot"
	CodeSkillGate     Code = "skill_gate"
	CodeEquipLocked   Code = "equip_locked"
	CodeItemNotFound  Code = "item_not_found"
	CodeInventoryFull Code = "inventory_full"
	CodeNotUsable     Code = "not_usable"

	// Abilities (docs/protocol.md, Abilities).
	CodeNotEnoughMana    Code = "not_enough_mana"
	CodeNotEnoughStamina Code = "not_enough_stamina"

	// Moderation (docs/operations.md, Moderation).
	CodeBanned Code = "banned"
	CodeKicked Code = "kicked"
)

// CloseKicked is the WebSocket close code of a session an operator ended
// (reason kicked, or banned): its own, so a client tells it from a fault
// and does not reconnect by itself.
const CloseKicked = 4001

// Codes are all the codes, in the order docs/protocol.md lists them.
var Codes = []Code{CodeBadRequest, CodeUnauthorized, CodeTokenExpired, CodeTokenReplayed, CodeWrongMap,
	CodeNotOwner, CodeRoomFull, CodeRateLimited, CodeMapQuarantined, CodePersistenceUnavailable,
	CodeInvalidAction, CodeCooldown, CodeOutOfRange, CodeAlreadyTaken,
	CodeIllegalSlot, CodeSkillGate, CodeEquipLocked, CodeItemNotFound, CodeInventoryFull, CodeNotUsable,
	CodeNotEnoughMana, CodeNotEnoughStamina, CodeBanned, CodeKicked, CodeInternal}
