package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The party flood of --chaos: guests of one address (this process), each
// creating a party of its own (parties cost nothing), walk into one soak
// room's instanced cellar: the abuse that once filled a map with copies
// nobody else could enter (docs/operations.md, "Multi-tenancy and
// limits"). The budgets must hold: the flood starts no more copies than
// the guests of one address may, a guest who gets none is refused
// room_full, and a keyed player's party in another room still gets a copy
// of its own.

// cellarMap is the soak rooms' instanced map, behind a portal in the town.
const cellarMap = "cellar"

// floodGuests is how many guests the flood brings, floodParallel how many
// at once.
const (
	floodGuests   = 8
	floodParallel = 4
)

// partyFlood runs the flood against room and checks its outcome; target
// names what it hit, and took checks that another room's keyed party
// still enters.
func (s *soak) partyFlood(ctx context.Context, round int) (target string, took func() error, err error) {
	room := s.rooms[round%len(s.rooms)]
	before, err := s.cellarCopies(ctx, room.Name)
	if err != nil {
		return room.Name, nil, err
	}
	entered, refused, err := s.floodCellar(ctx, room.Name)
	if err != nil {
		return room.Name, nil, err
	}
	after, err := s.cellarCopies(ctx, room.Name)
	switch {
	case err != nil:
		return room.Name, nil, err
	case after-before > instanced.MaxGuestPerAddress:
		err = fmt.Errorf("the guests of one address started %d cellars (budget %d)", after-before, instanced.MaxGuestPerAddress)
	case entered+refused < floodGuests:
		err = fmt.Errorf("of %d guests %d entered and %d were refused room_full: the rest failed otherwise", floodGuests, entered, refused)
	}
	other := s.rooms[(round+1)%len(s.rooms)]
	return fmt.Sprintf("%s (%d in %d new cellars, %d room_full)", room.Name, entered, after-before, refused),
		func() error { return s.keyedPartyEnters(ctx, other.Name, round) }, err
}

// floodCellar sends floodGuests guests, each of a new party, through
// room's town portal to its cellar, and counts how many entered and how
// many were refused room_full.
func (s *soak) floodCellar(ctx context.Context, room string) (entered, refused int, err error) {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, floodParallel)
	for i := range floodGuests {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			party, ack, err := s.partyEntersCellar(ctx, room, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ack.OK:
				entered++
			case ack.Code == protocol.CodeRoomFull:
				refused++
			default:
				errs = append(errs, fmt.Errorf("guest %d of party %s: ack %+v: %w", i, party, ack, err))
			}
		})
	}
	wg.Wait()
	if entered+refused == 0 {
		return 0, 0, errors.Join(errs...)
	}
	return entered, refused, nil
}

// keyedPartyEnters: a keyed player of a party of its own enters room's
// cellar, and plays there.
func (s *soak) keyedPartyEnters(ctx context.Context, room string, round int) error {
	_, ack, err := s.partyEntersCellar(ctx, room, fmt.Sprintf("%s-party-key-%d", s.cfg.prefix, round))
	switch {
	case err != nil:
		return fmt.Errorf("a keyed party entering %s's cellar: %w", room, err)
	case !ack.OK:
		return fmt.Errorf("a keyed party entering %s's cellar: refused %s", room, ack.Code)
	}
	return nil
}

// partyEntersCellar creates a party led by the player of key (a guest
// without one) and enters room's cellar as its leader.
func (s *soak) partyEntersCellar(ctx context.Context, room, key string) (party string, ack protocol.Ack, err error) {
	api := s.cfg.api
	p, err := joinflags.Patiently(ctx, func() (client.Party, error) { return api.API().CreateParty(ctx, api.Namespace, room, key) })
	if err != nil {
		return "", protocol.Ack{}, err
	}
	ack, err = s.enterCellar(ctx, room, client.JoinRequest{AuthKey: key, PartyToken: p.Token})
	return p.Party, ack, err
}

// enterCellar joins room's town with req, walks through the portal to the
// cellar and leaves once on the far side (or refused).
func (s *soak) enterCellar(ctx context.Context, room string, req client.JoinRequest) (protocol.Ack, error) {
	resp, err := joinflags.Patiently(ctx, func() (client.JoinResponse, error) {
		return s.cfg.api.API().Join(ctx, s.cfg.api.Namespace, room, req)
	})
	if err != nil {
		return protocol.Ack{}, err
	}
	c, err := playtest.DialPatiently(ctx, resp.Endpoint, resp.Ticket, s.cfg.api.ClientOptions(protocol.CodecBinary))
	if err != nil {
		return protocol.Ack{}, err
	}
	defer c.Close()
	ack, err := playtest.EnterPortal(ctx, c, cellarMap)
	if err == nil && ack.OK && c.Welcome().Map != cellarMap {
		err = fmt.Errorf("the transfer ended on %s", c.Welcome().Map)
	}
	return ack, err
}

// cellarCopies counts room's cellar instances.
func (s *soak) cellarCopies(ctx context.Context, room string) (int, error) {
	list := &gamev1.MapInstanceList{}
	err := s.watched.List(ctx, list, ctrlclient.InNamespace(s.cfg.api.Namespace),
		ctrlclient.MatchingLabels{gamev1.LabelRoom: room, gamev1.LabelMap: cellarMap})
	return len(list.Items), err
}
