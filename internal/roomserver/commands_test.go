package roomserver

import (
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// Every command the protocol lets a client send is served by a handler of
// the table, and the table serves nothing the protocol does not name.
func TestEveryProtocolCommandHasAHandler(t *testing.T) {
	known := protocol.Commands()
	for _, cmd := range known {
		if _, handled := commandHandlers[cmd]; !handled {
			t.Errorf("%s has no handler: add it to commandHandlers", cmd)
		}
	}
	for cmd := range commandHandlers {
		if !slices.Contains(known, cmd) {
			t.Errorf("the handler of %s serves a command the protocol does not have", cmd)
		}
	}
}
