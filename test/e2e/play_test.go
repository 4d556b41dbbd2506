package e2e

import (
	"context"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// nearestLoot returns the nearest loot c sees.
func nearestLoot(t *testing.T, ctx context.Context, c *pkgclient.Client) protocol.EntityState {
	t.Helper()
	loot, err := playtest.NearestLoot(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return loot
}

// walkTo steers c next to target.
func walkTo(t *testing.T, ctx context.Context, c *pkgclient.Client, target protocol.EntityState) {
	t.Helper()
	if err := playtest.WalkTo(ctx, c, target); err != nil {
		t.Fatal(err)
	}
}
