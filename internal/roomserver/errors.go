package roomserver

import (
	"context"
	"errors"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// What a client is told when something is refused: every error of the
// packages below (the world's, the store's, the tokens') becomes one of
// the protocol's stable codes here, and only here (docs/protocol.md,
// Error codes).

// errShuttingDown answers a request the map will not run: it is stopping.
var errShuttingDown = protocol.Errorf(protocol.CodeInternal, "the map is shutting down")

// asProtocolError is err as the client sees it: its own code when it has
// one, internal (with no details) when not.
func asProtocolError(err error) *protocol.ProtocolError {
	var pe *protocol.ProtocolError
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.Errorf(protocol.CodeInternal, "internal error")
}

// loopError is what a client is told when the tick goroutine did not take
// a job: the map is stopping, or too busy to take it in time. Either way
// the job did not run (sim.Loop.Do), so nothing changed.
func loopError(err error) error {
	if errors.Is(err, sim.ErrStopped) {
		return errShuttingDown
	}
	return protocol.Errorf(protocol.CodeInternal, "the map is busy: try again")
}

// classifyStoreError puts every store error in one of the documented
// classes: the client's fault or another player's (not_owner,
// already_taken, token_expired, unauthorized), the database's
// (persistence_unavailable: down, slow, cancelled) or ours (internal).
func classifyStoreError(err error, doing string) *protocol.ProtocolError {
	switch {
	case errors.Is(err, store.ErrNotOwner):
		return protocol.Errorf(protocol.CodeNotOwner, "the character belongs to another user")
	case errors.Is(err, store.ErrLeaseHeld):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "the character is active in another map")
	case errors.Is(err, store.ErrLeaseLost):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "the character became active in another map")
	case errors.Is(err, store.ErrSessionEnded):
		return protocol.Errorf(protocol.CodeTokenReplayed, "the session was resumed or the character joined again: join with a new ticket")
	case errors.Is(err, store.ErrTransferSettled):
		return protocol.Errorf(protocol.CodeTokenExpired, "the transfer is over (completed or cancelled): join again")
	case errors.Is(err, store.ErrNotFound):
		return protocol.Errorf(protocol.CodeUnauthorized, "%s: no such character or transfer", doing)
	case errors.Is(err, store.ErrItemTaken):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "someone else has it")
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrUnknownSchema), errors.Is(err, store.ErrUnknownSimCore):
		return protocol.Errorf(protocol.CodeInternal, "%s: %v", doing, err)
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return protocol.Errorf(protocol.CodePersistenceUnavailable, "%s: the database is unavailable, try again", doing)
	default:
		return protocol.Errorf(protocol.CodeInternal, "%s failed", doing)
	}
}

// ticketError maps a token error to its protocol code.
func ticketError(err error) error {
	switch {
	case errors.Is(err, token.ErrExpired):
		return protocol.Errorf(protocol.CodeTokenExpired, "the ticket has expired: ask for a new one")
	case errors.Is(err, token.ErrWrongMap):
		return protocol.Errorf(protocol.CodeWrongMap, "the ticket is for another map")
	case errors.Is(err, token.ErrReplayed):
		return protocol.Errorf(protocol.CodeTokenReplayed, "the ticket was already used")
	case errors.Is(err, store.ErrUnavailable):
		return protocol.Errorf(protocol.CodePersistenceUnavailable, "the database is unavailable, try again")
	case errors.Is(err, token.ErrMalformed):
		return protocol.Errorf(protocol.CodeUnauthorized, "the ticket is not valid")
	default:
		return protocol.Errorf(protocol.CodeInternal, "checking the ticket failed")
	}
}

// resumeError maps a refused resume token to its code.
func resumeError(err error) error {
	switch {
	case errors.Is(err, token.ErrExpired):
		return protocol.Errorf(protocol.CodeTokenExpired, "the resume token has expired: join with a new ticket")
	case errors.Is(err, token.ErrReplayed), errors.Is(err, store.ErrSessionEnded):
		return protocol.Errorf(protocol.CodeTokenReplayed, "the resume token was used, or the seat was taken again: join with a new ticket")
	case errors.Is(err, token.ErrMalformed):
		return protocol.Errorf(protocol.CodeUnauthorized, "the resume token is not valid: join with a new ticket")
	}
	return ticketError(err)
}

// portalError maps a refused portal.enter to its code.
func portalError(err error, portal uint32) error {
	switch {
	case errors.Is(err, sim.ErrOutOfRange):
		return protocol.Errorf(protocol.CodeOutOfRange, "stand within the portal's radius to enter it")
	case errors.Is(err, sim.ErrNoPortal):
		return protocol.Errorf(protocol.CodeInvalidAction, "entity %d is not a portal of this map", portal)
	case errors.Is(err, sim.ErrDead):
		return protocol.Errorf(protocol.CodeInvalidAction, "the dead cannot travel")
	case errors.Is(err, sim.ErrLeaving):
		return protocol.Errorf(protocol.CodeInvalidAction, "already on the way through a portal")
	default:
		return protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	}
}

// attackError maps a refused attack to its metric reason and protocol code.
func attackError(err error, target uint32) (string, error) {
	switch {
	case errors.Is(err, sim.ErrCooldown):
		return "cooldown", protocol.Errorf(protocol.CodeCooldown, "attacks are still cooling down")
	case errors.Is(err, sim.ErrOutOfRange):
		return "out_of_range", protocol.Errorf(protocol.CodeOutOfRange, "entity %d is out of range", target)
	case errors.Is(err, sim.ErrNoLineOfSight):
		return "no_line_of_sight", protocol.Errorf(protocol.CodeInvalidAction, "a wall is between you and entity %d", target)
	case errors.Is(err, sim.ErrNotATarget):
		return "not_a_target", protocol.Errorf(protocol.CodeInvalidAction, "entity %d is not something to attack", target)
	case errors.Is(err, sim.ErrDead):
		return "dead", protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	default: // on the way through a portal, or gone
		return "other", protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	}
}

// castError maps a refused cast to its metric reason and protocol code: an
// attack's, and the cast's own.
func castError(err error, c protocol.CombatCast) (string, error) {
	switch {
	case errors.Is(err, sim.ErrNotEnoughMana):
		return "not_enough_mana", protocol.Errorf(protocol.CodeNotEnoughMana, "%s costs more mana than you have", c.Ability)
	case errors.Is(err, sim.ErrNotEnoughStamina):
		return "not_enough_stamina", protocol.Errorf(protocol.CodeNotEnoughStamina, "%s costs more stamina than you have", c.Ability)
	case errors.Is(err, sim.ErrAbilityOnCooldown):
		return "cooldown", protocol.Errorf(protocol.CodeCooldown, "%s is still cooling down", c.Ability)
	case errors.Is(err, sim.ErrNoAbility):
		return "no_ability", protocol.Errorf(protocol.CodeInvalidAction, "%q is no ability of this map", c.Ability)
	}
	return attackError(err, c.Target)
}

// doorError maps a refused toggle to its protocol code.
func doorError(err error, door uint32) error {
	switch {
	case errors.Is(err, sim.ErrOutOfRange):
		return protocol.Errorf(protocol.CodeOutOfRange, "door %d is out of reach", door)
	case errors.Is(err, sim.ErrNotADoor):
		return protocol.Errorf(protocol.CodeInvalidAction, "entity %d is not a door", door)
	default: // locked, blocked, dead
		return protocol.Errorf(protocol.CodeInvalidAction, "door %d: %v", door, err)
	}
}

// worldError maps a refused reservation to its code.
func worldError(err error) error {
	switch {
	case errors.Is(err, sim.ErrOutOfRange):
		return protocol.Errorf(protocol.CodeOutOfRange, "too far away")
	case errors.Is(err, sim.ErrReserved):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "someone is already taking it")
	case errors.Is(err, sim.ErrNoItem):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "it is not there")
	case errors.Is(err, sim.ErrNotCarried):
		return protocol.Errorf(protocol.CodeNotOwner, "you do not carry that item")
	}
	return equipmentError(err)
}

// equipmentError maps a refused equipment change or a full bag to its code.
func equipmentError(err error) error {
	switch {
	case errors.Is(err, sim.ErrItemNotFound), errors.Is(err, sim.ErrSlotEmpty):
		return protocol.Errorf(protocol.CodeItemNotFound, "%v", err)
	case errors.Is(err, sim.ErrIllegalSlot):
		return protocol.Errorf(protocol.CodeIllegalSlot, "%v", err)
	case errors.Is(err, sim.ErrSkillGate):
		return protocol.Errorf(protocol.CodeSkillGate, "%v", err)
	case errors.Is(err, sim.ErrEquipLocked):
		return protocol.Errorf(protocol.CodeEquipLocked, "%v", err)
	case errors.Is(err, sim.ErrBagFull), errors.Is(err, sim.ErrTooHeavy):
		return protocol.Errorf(protocol.CodeInventoryFull, "%v", err)
	case errors.Is(err, sim.ErrNotUsable):
		return protocol.Errorf(protocol.CodeNotUsable, "%v", err)
	default:
		return protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	}
}
