package roomserver

import (
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// TestALeaseRenewedFromBeforeAReturnIsNotLost: a renewal that failed for
// the lease the seat held before its transfer came back (returned to the
// source, under a new epoch) signs nobody out; one that failed for the
// lease the seat still holds does, unless the seat is in a transfer.
func TestALeaseRenewedFromBeforeAReturnIsNotLost(t *testing.T) {
	before := store.Lease{CharacterID: "c-1", MapInstance: "demo-forest", Pod: "demo-forest", Epoch: 7}
	returned := before
	returned.Epoch = 8
	for _, tc := range []struct {
		name         string
		holds        store.Lease
		transferring bool
		lost, want   bool
	}{
		{"lost, the same lease held", before, false, true, true},
		{"lost, a new lease since (the transfer came back)", returned, false, true, false},
		{"lost, in a transfer", before, true, true, false},
		{"renewed", before, false, false, false},
	} {
		st := &seat{character: "c-1"}
		st.setLease(tc.holds)
		st.transferring.Store(tc.transferring)
		if got := lostToAnotherMap(st, before, tc.lost); got != tc.want {
			t.Errorf("%s: lost to another map %v, want %v", tc.name, got, tc.want)
		}
	}
}
