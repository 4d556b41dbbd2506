package joinapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func withMaxCharacters(n int) envOption { return func(o *Options) { o.MaxCharactersPerRoom = n } }

// TestCharacterCap: past the room's cap a fresh authKey's first join and
// a new character are refused with room_full and counted; players who
// have characters still join and play them; a deletion makes room.
func TestCharacterCap(t *testing.T) {
	e := newEnv(t, withMaxCharacters(4)) // not parallel: it reads a process-wide counter
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	refused := testutil.ToFloat64(charactersRefused)

	for i := range 3 {
		want(t, fmt.Sprint("join of user ", i), e.join("demo", JoinRequest{AuthKey: fmt.Sprint("key-", i)}), http.StatusOK, "")
	}
	bram := e.createCharacter("key-0", CreateCharacterRequest{Name: "Bram"}, http.StatusCreated) // the 4th

	r := e.join("demo", JoinRequest{AuthKey: "key-3"})
	want(t, "a new user's first join at the cap", r, http.StatusConflict, CodeRoomFull)
	if msg := r.errorBody(t).Message; !strings.Contains(msg, "maximum number of characters") {
		t.Fatalf("room_full message %q does not say why", msg)
	}
	want(t, "a new character at the cap", e.do(http.MethodPost, e.roomPath("demo")+"/characters", "key-1", CreateCharacterRequest{Name: "Cato"}),
		http.StatusConflict, CodeRoomFull)
	want(t, "a returning player", e.join("demo", JoinRequest{AuthKey: "key-1"}), http.StatusOK, "")
	want(t, "a chosen character", e.join("demo", JoinRequest{AuthKey: "key-0", CharacterID: bram.ID}), http.StatusOK, "")
	if got := testutil.ToFloat64(charactersRefused) - refused; got != 2 {
		t.Fatalf("roomkeeper_join_characters_refused_total rose by %v, want 2", got)
	}
	if n := e.count(`SELECT count(*) FROM characters`); n != 4 {
		t.Fatalf("%d characters, want the cap of 4", n)
	}

	// A deletion makes room for one; a user left with only inactive
	// characters gets one made active, which creates nothing and so is
	// not refused at the cap.
	hero := activeIDs(e.characters("key-0"))
	if len(hero) != 1 {
		t.Fatalf("key-0's active characters: %v", hero)
	}
	want(t, "delete key-0's hero", e.deleteCharacter("key-0", hero[0]), http.StatusNoContent, "")
	want(t, "a new user once there is room", e.join("demo", JoinRequest{AuthKey: "key-3"}), http.StatusOK, "")
	want(t, "and the room is full again", e.join("demo", JoinRequest{AuthKey: "key-4"}), http.StatusConflict, CodeRoomFull)
	_, claims := verify(t, e.join("demo", JoinRequest{AuthKey: "key-0"}), keys, "demo", "demo-town")
	if claims.Character != bram.ID {
		t.Fatalf("key-0 plays %s, want Bram (%s), made active", claims.Character, bram.ID)
	}
	if n := e.count(`SELECT count(*) FROM characters`); n != 4 {
		t.Fatalf("%d characters, want the cap of 4", n)
	}
}

// TestCharacterCapUnderConcurrency: fresh authKeys joining and creating
// all at once, through two handlers on one database (two manager
// replicas), never take the room past its cap: exactly cap of them get a
// character, the rest room_full.
func TestCharacterCapUnderConcurrency(t *testing.T) {
	t.Parallel()
	const limit, clients = 5, 24
	e := newEnv(t, withMaxCharacters(limit))
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	other := NewHandler(Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
		Log: e.log.logger(), Clock: clock, Limits: generous, MaxCharactersPerRoom: limit})
	otherSrv := httptest.NewServer(other)
	t.Cleanup(func() {
		otherSrv.Close()
		_ = other.Close()
	})
	replicas := []*env{e, {t: t, ctx: e.ctx, ns: e.ns, srv: otherSrv}}
	// The other replica must see the room before the race starts.
	replicas[1].eventually(http.StatusOK, "", func() reply { return replicas[1].join("demo", JoinRequest{}) })

	answers := make(chan reply, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			r := replicas[i%2]
			key := fmt.Sprint("racer-", i)
			var got reply
			var err error
			if i%3 == 0 { // some create explicitly, the rest by their first join
				got, err = r.try(http.MethodPost, r.roomPath("demo")+"/characters", key, CreateCharacterRequest{Name: "Racer"})
			} else {
				got, err = r.try(http.MethodPost, r.roomPath("demo")+"/join", "", JoinRequest{AuthKey: key})
			}
			if err != nil {
				errs <- err
				return
			}
			answers <- got
		})
	}
	wg.Wait()
	close(answers)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	made, full := 0, 0
	for r := range answers {
		switch {
		case r.status == http.StatusOK || r.status == http.StatusCreated:
			made++
		case errorCode(r) == CodeRoomFull:
			full++
		default:
			t.Fatalf("answer %s, want a character or room_full", r)
		}
	}
	if made != limit || full != clients-limit {
		t.Fatalf("%d got a character and %d room_full, want %d and %d", made, full, limit, clients-limit)
	}
	if n := e.count(`SELECT count(*) FROM characters`); n != limit {
		t.Fatalf("%d characters in the database, want the cap of %d", n, limit)
	}
}
