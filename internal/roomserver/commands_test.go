package roomserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// Every command the protocol lets a client send is either served by a
// handler of the table or reserved, never both, and the table serves
// nothing the protocol does not name.
func TestEveryProtocolCommandHasAHandlerOrIsReserved(t *testing.T) {
	known := protocol.Commands()
	for _, cmd := range known {
		_, handled := commandHandlers[cmd]
		reserved := slices.Contains(reservedCommands, cmd)
		switch {
		case handled && reserved:
			t.Errorf("%s has a handler and is reserved", cmd)
		case !handled && !reserved:
			t.Errorf("%s has no handler and is not reserved: add it to commandHandlers or reservedCommands", cmd)
		}
	}
	for cmd := range commandHandlers {
		if !slices.Contains(known, cmd) {
			t.Errorf("the handler of %s serves a command the protocol does not have", cmd)
		}
	}
	for _, cmd := range reservedCommands {
		if !slices.Contains(known, cmd) {
			t.Errorf("reserved %s is not a protocol command", cmd)
		}
	}
}

// A reserved command is a valid name, answered over the socket with
// ok=false, invalid_action, and the connection plays on.
func TestReservedCommandsAreRefusedAsInvalidActions(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, cmd := range reservedCommands {
		ack, err := c.Do(ctx, cmd.Feature, cmd.Action, struct{}{})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if ack.OK || ack.Code != protocol.CodeInvalidAction {
			t.Errorf("%s: %+v, want ok=false, invalid_action", cmd, ack)
		}
	}
}
