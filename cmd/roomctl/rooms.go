package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// maxLobbyPages bounds how many pages rooms follows: 200 pages of 200.
const maxLobbyPages = 200

// runRooms prints the lobby: the rooms of a namespace (or of every one)
// that a label selector matches, with their maps and players.
func runRooms(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rooms", flag.ContinueOnError)
	var j joinflags.Flags
	j.Register(fs)
	all := fs.Bool("all-namespaces", false, "list the rooms of every namespace")
	selector := fs.String("selector", "", "only rooms with these labels (mode=coop,region in (eu,us))")
	pageSize := fs.Int("page-size", 0, "rooms asked for at a time, 1 to 200 (0: the join API's 50)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("rooms takes no arguments")
	}
	useDefaultJoinAPI(&j, nil, "")
	q := client.LobbyQuery{Namespace: j.Namespace, LabelSelector: *selector, Limit: *pageSize}
	if *all {
		q.Namespace = ""
	}
	var rooms []client.RoomSummary
	for range maxLobbyPages {
		page, err := j.API().Rooms(ctx, q)
		if err != nil {
			return err
		}
		rooms = append(rooms, page.Rooms...)
		if q.Continue = page.Continue; q.Continue == "" {
			return printRooms(rooms)
		}
	}
	return fmt.Errorf("more than %d pages of rooms: narrow --selector", maxLobbyPages)
}

// printRooms prints a table of rooms, one line each.
func printRooms(rooms []client.RoomSummary) error {
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tPHASE\tJOINABLE\tPLAYERS\tMAPS")
	for _, r := range rooms {
		joinable := "no"
		if r.Joinable {
			joinable = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.Namespace, r.Name, r.Phase, joinable, r.Players, r.Capacity, mapsLine(r))
	}
	return w.Flush()
}

// mapsLine is a room's maps as "town 3/100, crypt 2 in 1 instances", a
// sharded map's shards with theirs: "town 130/200 in 2 of 4 shards
// (demo-town 80, demo-town-s2 50)".
func mapsLine(r client.RoomSummary) string {
	parts := make([]string, 0, len(r.Maps))
	for _, m := range r.Maps {
		switch {
		case m.Instanced:
			parts = append(parts, fmt.Sprintf("%s %d in %d instances", m.Name, m.Players, len(m.Instances)))
		case m.MaxShards > 1 || m.Shards > 1:
			each := make([]string, 0, len(m.Instances))
			for _, in := range m.Instances {
				each = append(each, fmt.Sprintf("%s %d", in.Name, in.Players))
			}
			parts = append(parts, fmt.Sprintf("%s %d/%d in %d of %d shards (%s)", m.Name, m.Players, m.Capacity*max(1, m.Shards),
				m.Shards, m.MaxShards, strings.Join(each, ", ")))
		default:
			parts = append(parts, fmt.Sprintf("%s %d/%d", m.Name, m.Players, m.Capacity))
		}
	}
	return strings.Join(parts, ", ")
}
