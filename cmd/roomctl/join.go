package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// runJoin joins as one player, prints the welcome, then a summary line per
// second until the duration ends or Ctrl-C.
func runJoin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("join", flag.ContinueOnError)
	var t ticketFlags
	t.register(fs)
	var j joinflags.Flags
	j.Register(fs)
	j.RegisterMap(fs)
	authKey := fs.String("auth-key", "", "your secret, with --join-api (default: join as a guest)")
	endpoint := fs.String("endpoint", "", "the map's WebSocket URL (ws://HOST:7350/ws)")
	codec := fs.String("codec", protocol.CodecJSON, "snapshot codec: json or binary")
	duration := fs.Duration("duration", 0, "leave after this long (0: until Ctrl-C)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	j.Instance = t.instance
	useDefaultJoinAPI(&j, &t, *endpoint)
	url, ticket, err := seat(ctx, &t, &j, *endpoint, *authKey)
	if err != nil {
		return err
	}
	opts := j.ClientOptions(*codec)
	if j.URL != "" { // come back by itself after a crash or drain of the map, through the join API
		opts.Reconnect = j.API().Reconnect(j.Namespace, t.room, client.JoinRequest{})
		opts.Reconnect.Rejoin = func(ctx context.Context) (string, string, error) {
			resp, err := j.Join(ctx, t.room, *authKey, t.character) // in its party again
			return resp.Endpoint, resp.Ticket, err
		}
	}
	c, err := client.Dial(ctx, url, protocol.Hello{Ticket: ticket}, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	w := c.Welcome()
	w.MapConfig = nil // printed as its hash; the config is long
	if err := enc.Encode(w); err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	return summarise(ctx, c)
}

// seat is the endpoint and ticket to join with: from the join API with
// --join-api, else the given endpoint with a given or locally minted ticket.
func seat(ctx context.Context, t *ticketFlags, j *joinflags.Flags, endpoint, authKey string) (string, string, error) {
	if j.URL == "" {
		if endpoint == "" {
			return "", "", errors.New("--endpoint (or --join-api) is required")
		}
		ticket, err := t.get()
		return endpoint, ticket, err
	}
	if err := checkExclusive(t, endpoint); err != nil {
		return "", "", err
	}
	resp, err := j.Join(ctx, t.room, authKey, t.character)
	return resp.Endpoint, resp.Ticket, err
}

func summarise(ctx context.Context, c *client.Client) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastBytes, travels, reconnects := 0, 0, 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			_ = c.Ping()
			s := c.Snapshot()
			if s.Closed != nil {
				return fmt.Errorf("disconnected: %w", s.Closed)
			}
			rtt := time.Duration(0)
			if len(s.RTTs) > 0 {
				rtt = s.RTTs[len(s.RTTs)-1]
			}
			if s.Transfers+s.Returns != travels {
				travels = s.Transfers + s.Returns
				fmt.Printf("transferred to map %s (%s)\n", s.Map, s.Instance)
			}
			if s.Reconnects != reconnects {
				reconnects = s.Reconnects
				fmt.Printf("reconnected to %s (%d resumed, %d joined again)\n", c.Endpoint(), s.Resumes, s.Rejoins)
			}
			fmt.Printf("map %s  tick %d  in sight %d  at (%.1f, %.1f)  hp %d  rtt %s  %d B/s\n",
				s.Map, s.Tick, len(s.Entities), s.Self.X, s.Self.Y, s.Self.HP, rtt.Round(time.Microsecond), s.Bytes-lastBytes)
			lastBytes = s.Bytes
		}
	}
}
