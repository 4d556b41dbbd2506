package roomserver

import "github.com/roomkeeper/roomkeeper/internal/protocol"

// commandHandler runs one command of a seated session and answers it (an
// ack, or a refusal with its code).
type commandHandler func(sess *session, env protocol.Envelope)

// commandHandlers is the one table of the commands this server serves,
// each in its feature's file: movement.go, combat.go, loot.go (pickup),
// inventory.go (drop), doors.go (door), transfer.go (portal). A protocol command without a handler is
// reserved (reservedCommands). commands_test.go holds the table to
// protocol.Commands.
var commandHandlers = map[protocol.Command]commandHandler{
	{Feature: protocol.FeatureMovement, Action: protocol.ActionInput}: (*session).handleMovement,
	{Feature: protocol.FeatureCombat, Action: protocol.ActionAttack}:  (*session).handleAttack,
	{Feature: protocol.FeatureLoot, Action: protocol.ActionPickup}:    (*session).handlePickup,
	{Feature: protocol.FeatureInventory, Action: protocol.ActionDrop}: (*session).handleDrop,
	{Feature: protocol.FeaturePortal, Action: protocol.ActionEnter}:   (*session).handlePortal,
	{Feature: protocol.FeatureDoor, Action: protocol.ActionToggle}:    (*session).handleDoorToggle,
}

// reservedCommands are valid names whose feature this server does not
// serve yet: answered with invalid_action (docs/protocol.md, Commands).
var reservedCommands = []protocol.Command{
	{Feature: protocol.FeatureInventory, Action: protocol.ActionEquip},
	{Feature: protocol.FeatureInventory, Action: protocol.ActionUnequip},
}

// handleCommand runs one gameplay command by the table; a command not in
// it is acked with ok=false, invalid_action.
func (sess *session) handleCommand(env protocol.Envelope) {
	defer sess.srv.seats.setLastSeq(sess.seat, env.Seq)
	cmd := protocol.Command{Feature: env.Feature, Action: env.Action}
	handle, ok := commandHandlers[cmd]
	if !ok {
		sess.refuse(env.Seq, protocol.Errorf(protocol.CodeInvalidAction, "%s is not available on this map", cmd))
		return
	}
	handle(sess, env)
}
