package roomserver

import (
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// TestMapOfInstance: another MapInstance's map, read back from its name:
// a shared map, a party's copy, a shard; the longest map name that fits.
func TestMapOfInstance(t *testing.T) {
	portals := []mapgen.PortalAnchor{{To: "town"}, {To: "town-east"}, {To: "crypt"}}
	for instance, want := range map[string]string{
		"demo-town":         "town",
		"demo-town-s2":      "town",
		"demo-town-east":    "town-east",
		"demo-town-east-s3": "town-east",
		"demo-crypt-x4k2p":  "crypt",
		"demo-forest":       "",
		"other-town":        "",
	} {
		if got := mapOfInstance("demo", portals, instance); got != want {
			t.Errorf("mapOfInstance(%s) = %q, want %q", instance, got, want)
		}
	}
}
