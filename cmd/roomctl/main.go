// Command roomctl plays Roomkeeper from the command line: join a map as a
// player, run bots against it, manage characters, and (for development)
// make keys and mint tickets locally. Benchmarks and soaks are roomload's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `roomctl: play Roomkeeper maps

  roomctl join       --join-api http://HOST:8090 --room R [--namespace NS] [--auth-key K] [--character C] [--map M] [--party-token T] [--ca-file F]
  roomctl join       --endpoint ws://HOST:7350/ws (--ticket T | --key-dir D --room R --instance I)
  roomctl bots       --join-api http://HOST:8090 --room R [--namespace NS] [--auth-key-prefix P] [--party NAME] [--ca-file F] --count N --duration D
  roomctl bots       --endpoint ws://HOST:7350/ws --key-dir D --room R --instance I --count N --duration D
  roomctl characters --join-api http://HOST:8090 --room R [--namespace NS] --auth-key K [list | create [--active] NAME | get ID | delete ID]
  roomctl party      --join-api http://HOST:8090 --room R [--namespace NS] ([--auth-key K] create | --id P --party-token LEADER invite)
  roomctl rooms      --join-api http://HOST:8090 [--namespace NS | --all-namespaces] [--selector mode=coop]
  roomctl history character ID --room R [--namespace NS] [--since 24h] [--admin-api URL] [--token T | --token-file F]
  roomctl audit replay --character ID --room R [--namespace NS] [--admin-api URL] [--token T | --token-file F]
  roomctl admin      (kick (--user U | --character C) | ban --user U --duration 72h | unban --user U | save | message --text T) [--map M] [--reason R] --room R [--namespace NS] [--admin-api URL] [--token T | --token-file F]
  roomctl mint       --key-dir D --room R --instance I [--character C] [--user U] [--ttl 10s]
  roomctl keygen     --dir D

Without --auth-key a player joins as a disposable guest; with one, as the
user that key derives, playing their active character unless --character
names another. Players of one party share its instanced maps: a party is
made by the join API (roomctl party create), and joined only with a party
token (--party-token; the leader's invite makes more). With --party NAME,
the players of one command share a party it creates.

history, audit and admin are for platform operators: they call the
manager's admin API (default http://127.0.0.1:8093) with a Kubernetes
bearer token ($ROOMKEEPER_ADMIN_TOKEN, --token or --token-file) granted get
(history, audit) or update (admin) on the room's gamerooms/admin
(docs/operations.md, "Answering a player's support ticket", "Moderation"):
history lists a character's checkpoints, transfers, critical actions and
recoveries in time order; audit replay re-derives each checkpoint's items
and fails on any divergence; admin kicks, bans, saves and messages.

To benchmark a map server or soak a cluster, see roomload.

mint and keygen are for development: in a cluster the operator owns the keys
and the join API issues tickets.
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "roomctl:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	commands := map[string]func(context.Context, []string) error{
		"join": runJoin, "bots": runBots, "characters": runCharacters, "rooms": runRooms, "party": runParty, "mint": runMint, "keygen": runKeygen,
		"history": runHistory, "audit": runAudit, "admin": runAdmin,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd(ctx, args[1:])
}

// ticketFlags say where a ticket comes from: given, or minted locally.
type ticketFlags struct {
	ticket, keyDir, room, instance, user, character string
}

func (t *ticketFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.ticket, "ticket", "", "a join ticket (from the join API)")
	fs.StringVar(&t.keyDir, "key-dir", "", "mint tickets locally with the keys in this directory (development)")
	fs.StringVar(&t.room, "room", "", "the GameRoom's name")
	fs.StringVar(&t.instance, "instance", "", "MapInstance name: for minting; with --join-api, the shard of the map to join (a friend's, as `roomctl rooms` or a welcome names it; default: the join API chooses)")
	fs.StringVar(&t.user, "user", "dev-user", "user id, for minting")
	fs.StringVar(&t.character, "character", "", "character id (default: the active one with --join-api, else one per minted ticket)")
}
