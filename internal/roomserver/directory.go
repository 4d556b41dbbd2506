package roomserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/roomkeeper/roomkeeper/internal/directory"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// JoinAPIDirectory asks the manager's join API where portals lead: in a
// cluster, the operator knows which MapInstance serves a map, and creates
// a party's instanced map on demand.
func JoinAPIDirectory(c *directory.Client) Directory { return joinAPIDirectory{c} }

type joinAPIDirectory struct{ client *directory.Client }

// Resolve asks the join API and turns its refusals into what the player
// is told: a destination that is quarantined, missing or not ready in
// time is map_quarantined (the player stays where it is and may try
// again), a busy join API rate_limited, anything else internal.
func (d joinAPIDirectory) Resolve(ctx context.Context, req DestinationRequest) (Destination, error) {
	dest, err := d.client.Resolve(ctx, req.Map, directory.Player{User: req.User, Character: req.Character, Party: req.Party, Address: req.Address})
	if err == nil {
		return Destination{Map: dest.Map, Instance: dest.Instance, Endpoint: dest.Endpoint}, nil
	}
	var de *directory.Error
	if !errors.As(err, &de) {
		return Destination{}, err
	}
	switch de.Code {
	case directory.CodeMapQuarantined, directory.CodeRoomNotReady:
		msg := fmt.Sprintf("map %s is not available: %s", req.Map, de.Message)
		if de.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry in %d s)", de.RetryAfter)
		}
		return Destination{}, protocol.Errorf(protocol.CodeMapQuarantined, "%s", msg)
	case directory.CodeRateLimited:
		return Destination{}, protocol.Errorf(protocol.CodeRateLimited, "too many transfers at once: try again")
	case directory.CodeRoomFull:
		return Destination{}, protocol.Errorf(protocol.CodeRoomFull, "%s", de.Message)
	case directory.CodeBadRequest:
		return Destination{}, protocol.Errorf(protocol.CodeInvalidAction, "the portal to %s leads nowhere", req.Map)
	}
	return Destination{}, err
}

// ParseStaticDirectory reads a fixed directory from its flag form:
// comma-separated map=instance@endpoint entries, such as
// "crypt=demo-crypt@ws://127.0.0.1:7351/ws".
func ParseStaticDirectory(s string) (StaticDirectory, error) {
	d := StaticDirectory{}
	for entry := range strings.SplitSeq(s, ",") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		name, rest, ok := strings.Cut(entry, "=")
		instance, endpoint, ok2 := strings.Cut(rest, "@")
		if !ok || !ok2 || name == "" || instance == "" || endpoint == "" {
			return nil, fmt.Errorf("destination %q: want map=instance@endpoint", entry)
		}
		d[name] = Destination{Map: name, Instance: instance, Endpoint: endpoint}
	}
	return d, nil
}
