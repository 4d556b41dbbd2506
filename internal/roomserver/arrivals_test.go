package roomserver

import (
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// TestABatchOfArrivalsNamesEachTransferAndCharacterOnce: arrivals that
// would name a transfer or a character twice in one transaction wait for
// the next batch, in their order.
func TestABatchOfArrivalsNamesEachTransferAndCharacterOnce(t *testing.T) {
	arrival := func(transfer, character string) arrivalRequest {
		return arrivalRequest{ArrivalRequest: store.ArrivalRequest{TransferID: transfer, CharacterID: character}}
	}
	waiting := []arrivalRequest{arrival("x1", "alice"), arrival("x2", "bob"), arrival("x1", "carol"),
		arrival("x3", "alice"), arrival("x4", "dave"), arrival("x5", "alice")}
	var batches [][]string
	for len(waiting) > 0 {
		var batch []arrivalRequest
		batch, waiting = distinctArrivals(waiting)
		var names []string
		for _, r := range batch {
			names = append(names, r.TransferID+"/"+r.CharacterID)
		}
		batches = append(batches, names)
	}
	want := [][]string{{"x1/alice", "x2/bob", "x4/dave"}, {"x1/carol", "x3/alice"}, {"x5/alice"}}
	if !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
}
