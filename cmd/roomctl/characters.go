package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// stdout is where the characters command prints; tests read it.
var stdout io.Writer = os.Stdout

// characterCall is one characters subcommand with its arguments.
type characterCall struct {
	api             *client.JoinAPI
	namespace, room string
	authKey         string
	args            []string
}

// runCharacters lists, shows, creates and deletes a player's characters
// through the join API.
func runCharacters(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("characters", flag.ContinueOnError)
	var j joinflags.Flags
	j.Register(fs)
	room := fs.String("room", "", "the GameRoom's name")
	authKey := fs.String("auth-key", "", "your secret: it says whose characters these are")
	if err := fs.Parse(args); err != nil {
		return err
	}
	useDefaultJoinAPI(&j, nil, "")
	if *room == "" || *authKey == "" {
		return errors.New("characters needs --room and --auth-key")
	}
	call := characterCall{api: j.API(), namespace: j.Namespace, room: *room, authKey: *authKey}
	sub := "list"
	if fs.NArg() > 0 {
		sub, call.args = fs.Arg(0), fs.Args()[1:]
	}
	subcommands := map[string]func(context.Context, characterCall) error{
		"list": listCharacters, "create": createCharacter, "get": getCharacter, "delete": deleteCharacter,
	}
	fn, ok := subcommands[sub]
	if !ok {
		return fmt.Errorf("unknown characters subcommand %q: want list, create NAME, get ID or delete ID", sub)
	}
	return fn(ctx, call)
}

func listCharacters(ctx context.Context, c characterCall) error {
	if len(c.args) != 0 {
		return errors.New("list takes no arguments")
	}
	list, err := c.api.Characters(ctx, c.namespace, c.room, c.authKey)
	if err != nil {
		return err
	}
	return printCharacters(list...)
}

// createCharacter runs "create [--active] NAME".
func createCharacter(ctx context.Context, c characterCall) error {
	fs := flag.NewFlagSet("characters create", flag.ContinueOnError)
	active := fs.Bool("active", false, "make the new character the active one")
	if err := fs.Parse(c.args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: create [--active] NAME")
	}
	ch, err := c.api.CreateCharacter(ctx, c.namespace, c.room, c.authKey, fs.Arg(0), *active)
	if err != nil {
		return err
	}
	return printCharacters(ch)
}

func getCharacter(ctx context.Context, c characterCall) error {
	if len(c.args) != 1 {
		return errors.New("usage: get ID")
	}
	ch, err := c.api.Character(ctx, c.namespace, c.room, c.authKey, c.args[0])
	if err != nil {
		return err
	}
	return printCharacters(ch)
}

func deleteCharacter(ctx context.Context, c characterCall) error {
	if len(c.args) != 1 {
		return errors.New("usage: delete ID")
	}
	if err := c.api.DeleteCharacter(ctx, c.namespace, c.room, c.authKey, c.args[0]); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, "deleted", c.args[0])
	return err
}

// printCharacters prints a table, the active character marked.
func printCharacters(list ...client.Character) error {
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tACTIVE\tCREATED")
	for _, c := range list {
		active := ""
		if c.Active {
			active = "*"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.ID, c.Name, active, c.CreatedAt.Format(time.RFC3339))
	}
	return w.Flush()
}
