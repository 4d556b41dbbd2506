package roomserver

import "github.com/roomkeeper/roomkeeper/internal/protocol"

// commandHandler runs one command of a seated session and answers it (an
// ack, or a refusal with its code).
type commandHandler func(sess *session, env protocol.Envelope)

// commandHandlers is the one table of the commands this server serves,
// each in its feature's file: movement.go, combat.go, loot.go (pickup),
// inventory.go (drop), equipment.go (equip, unequip), doors.go (door),
// transfer.go (portal). commands_test.go holds the table to
// protocol.Commands: every command has its handler.
var commandHandlers = map[protocol.Command]commandHandler{
	{Feature: protocol.FeatureMovement, Action: protocol.ActionInput}:    (*session).handleMovement,
	{Feature: protocol.FeatureCombat, Action: protocol.ActionAttack}:     (*session).handleAttack,
	{Feature: protocol.FeatureLoot, Action: protocol.ActionPickup}:       (*session).handlePickup,
	{Feature: protocol.FeatureInventory, Action: protocol.ActionDrop}:    (*session).handleDrop,
	{Feature: protocol.FeatureInventory, Action: protocol.ActionUse}:     (*session).handleUse,
	{Feature: protocol.FeatureCombat, Action: protocol.ActionCast}:       (*session).handleCast,
	{Feature: protocol.FeatureInventory, Action: protocol.ActionEquip}:   (*session).handleEquip,
	{Feature: protocol.FeatureInventory, Action: protocol.ActionUnequip}: (*session).handleUnequip,
	{Feature: protocol.FeaturePortal, Action: protocol.ActionEnter}:      (*session).handlePortal,
	{Feature: protocol.FeatureDoor, Action: protocol.ActionToggle}:       (*session).handleDoorToggle,
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
