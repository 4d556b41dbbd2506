package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// runParty makes a party (create) or a member's party token (invite) and
// prints it as JSON: hand its token to the player who joins with
// --party-token.
func runParty(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("party", flag.ContinueOnError)
	var j joinflags.Flags
	j.Register(fs)
	room := fs.String("room", "", "the GameRoom's name")
	authKey := fs.String("auth-key", "", "create: the leader's secret (default: a guest leads)")
	id := fs.String("id", "", "invite: the party's id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	useDefaultJoinAPI(&j, nil, "")
	if *room == "" || fs.NArg() != 1 {
		return errors.New("party needs --room and create or invite")
	}
	var p client.Party
	var err error
	switch fs.Arg(0) {
	case "create":
		p, err = j.API().CreateParty(ctx, j.Namespace, *room, *authKey)
	case "invite":
		if *id == "" || j.PartyToken == "" {
			return errors.New("party invite needs --id and the leader's --party-token")
		}
		p, err = j.API().Invite(ctx, j.Namespace, *room, client.Party{Party: *id, Token: j.PartyToken})
	default:
		return errors.New("party takes create or invite")
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}
