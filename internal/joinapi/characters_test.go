package joinapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lib/pq"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// characters lists the user's characters in the room "demo".
func (e *env) characters(key string) []Character {
	e.t.Helper()
	r := e.do(http.MethodGet, e.roomPath("demo")+"/characters", key, nil)
	want(e.t, "list characters", r, http.StatusOK, "")
	var list CharacterList
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatalf("list %s: %v", r, err)
	}
	return list.Characters
}

// createCharacter creates a character in the room "demo" and wants status.
func (e *env) createCharacter(key string, req CreateCharacterRequest, status int) Character {
	e.t.Helper()
	r := e.do(http.MethodPost, e.roomPath("demo")+"/characters", key, req)
	var c Character
	if r.status != status || json.Unmarshal(r.body, &c) != nil {
		e.t.Fatalf("create %+v: answer %s, want %d", req, r, status)
	}
	return c
}

func (e *env) character(key, id string) reply {
	return e.do(http.MethodGet, e.roomPath("demo")+"/characters/"+id, key, nil)
}

func (e *env) deleteCharacter(key, id string) reply {
	return e.do(http.MethodDelete, e.roomPath("demo")+"/characters/"+id, key, nil)
}

// count runs a SELECT count(*) on the env's database.
func (e *env) count(query string) int {
	e.t.Helper()
	db, err := store.OpenDB(e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(e.ctx, query).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// activeIDs lists the ids of the active characters.
func activeIDs(list []Character) []string {
	var ids []string
	for _, c := range list {
		if c.Active {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func TestCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createRoom("demo", withDatabase())
	const key = "alice-auth-key-0123456789"
	e.eventually(http.StatusOK, "", func() reply { return e.do(http.MethodGet, e.roomPath("demo")+"/characters", key, nil) })
	if list := e.characters(key); len(list) != 0 {
		t.Fatalf("a new user has %+v", list)
	}
	ayla := e.createCharacter(key, CreateCharacterRequest{Name: "  Ayla  "}, http.StatusCreated)
	if ayla.Name != "Ayla" || !ayla.Active || !strings.HasPrefix(ayla.ID, "c-") || !ayla.CreatedAt.Equal(ayla.CreatedAt.UTC()) {
		t.Fatalf("first character %+v, want active Ayla", ayla)
	}
	bram := e.createCharacter(key, CreateCharacterRequest{Name: "Bram"}, http.StatusCreated)
	if bram.Active {
		t.Fatalf("second character %+v is active", bram)
	}
	cato := e.createCharacter(key, CreateCharacterRequest{Name: "Cato", Active: true}, http.StatusCreated)
	list := e.characters(key)
	if len(list) != 3 || list[0].ID != ayla.ID || list[1].ID != bram.ID || list[2].ID != cato.ID ||
		fmt.Sprint(activeIDs(list)) != fmt.Sprint([]string{cato.ID}) {
		t.Fatalf("list %+v, want Ayla, Bram, Cato with Cato active", list)
	}
	r := e.character(key, bram.ID)
	var got Character
	if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got != bram {
		t.Fatalf("get Bram: %s, want %+v", r, bram)
	}
	if r := e.deleteCharacter(key, cato.ID); r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("delete Cato: %s, want 204 and no body", r)
	}
	list = e.characters(key)
	if len(list) != 2 || len(activeIDs(list)) != 0 {
		t.Fatalf("after deleting the active character: %+v, want two, none active", list)
	}
	want(t, "get deleted", e.character(key, cato.ID), http.StatusNotFound, CodeNotFound)
	want(t, "delete deleted", e.deleteCharacter(key, cato.ID), http.StatusNotFound, CodeNotFound)
}

func TestCharactersErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createRoom("demo", withDatabase())
	e.createRoom("nodb")
	const key = "alice-auth-key-0123456789"
	path := e.roomPath("demo") + "/characters"
	e.eventually(http.StatusOK, "", func() reply { return e.do(http.MethodGet, path, key, nil) })

	for name, r := range map[string]reply{
		"list without a key":     e.do(http.MethodGet, path, "", nil),
		"create without a key":   e.do(http.MethodPost, path, "", CreateCharacterRequest{Name: "x"}),
		"get without a key":      e.do(http.MethodGet, path+"/c-1", "", nil),
		"delete without a key":   e.do(http.MethodDelete, path+"/c-1", "", nil),
		"basic auth, not bearer": e.doHeader(http.MethodGet, path, "Basic YWxpY2U6eA=="),
		"bearer without a key":   e.doHeader(http.MethodGet, path, "Bearer  "),
	} {
		want(t, name, r, http.StatusUnauthorized, CodeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", name)
		}
	}
	for name, body := range map[string]any{
		"empty name":      CreateCharacterRequest{Name: "   "},
		"long name":       CreateCharacterRequest{Name: strings.Repeat("é", 33)},
		"control in name": CreateCharacterRequest{Name: "a\x00b"},
		"unknown field":   `{"name": "x", "level": 99}`,
		"not JSON":        `{"name": }`,
	} {
		want(t, name, e.do(http.MethodPost, path, key, body), http.StatusBadRequest, CodeBadRequest)
	}
	want(t, "room without a database", e.do(http.MethodGet, e.roomPath("nodb")+"/characters", key, nil),
		http.StatusBadRequest, CodeBadRequest)
	want(t, "no such room", e.do(http.MethodGet, e.roomPath("nope")+"/characters", key, nil),
		http.StatusNotFound, CodeRoomNotFound)
	want(t, "no such endpoint", e.do(http.MethodPut, path, key, nil), http.StatusNotFound, CodeNotFound)
	for _, id := range []string{"c-%00", "c%20x", "c-%E2%80%8B", strings.Repeat("c", 65)} { // never reaches the database
		want(t, "get "+id, e.do(http.MethodGet, path+"/"+id, key, nil), http.StatusBadRequest, CodeBadRequest)
		want(t, "delete "+id, e.do(http.MethodDelete, path+"/"+id, key, nil), http.StatusBadRequest, CodeBadRequest)
	}

	for i := range store.MaxCharactersPerUser { // the failed calls above made none
		e.createCharacter(key, CreateCharacterRequest{Name: fmt.Sprint("c", i)}, http.StatusCreated)
	}
	want(t, "one too many", e.do(http.MethodPost, path, key, CreateCharacterRequest{Name: "more"}), http.StatusBadRequest, CodeBadRequest)
}

// doHeader sends a request with a raw Authorization header.
func (e *env) doHeader(method, path, authorization string) reply {
	e.t.Helper()
	return e.doWith(method, path, http.Header{"Authorization": {authorization}})
}

// doWith sends a request without a body and with header.
func (e *env) doWith(method, path string, header http.Header) reply {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = header
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// TestUsersCannotTouchEachOthersCharacters: user B can neither see, play,
// nor delete user A's character.
func TestUsersCannotTouchEachOthersCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const alice, bob = "alice-auth-key-0123456789", "bob-auth-key-9876543210"
	ayla := e.createCharacter(alice, CreateCharacterRequest{Name: "Ayla"}, http.StatusCreated)

	if list := e.characters(bob); len(list) != 0 {
		t.Fatalf("bob sees %+v", list)
	}
	want(t, "bob gets Ayla", e.character(bob, ayla.ID), http.StatusForbidden, CodeNotOwner)
	want(t, "bob plays Ayla", e.join("demo", JoinRequest{AuthKey: bob, CharacterID: ayla.ID}), http.StatusForbidden, CodeNotOwner)
	want(t, "bob deletes Ayla", e.deleteCharacter(bob, ayla.ID), http.StatusForbidden, CodeNotOwner)

	if list := e.characters(alice); len(list) != 1 || list[0].ID != ayla.ID {
		t.Fatalf("alice's characters after bob's attempts: %+v", list)
	}
	bobs := e.createCharacter(bob, CreateCharacterRequest{Name: "Bork"}, http.StatusCreated)
	if !bobs.Active || bobs.ID == ayla.ID {
		t.Fatalf("bob's first character %+v, want his own, active", bobs)
	}
}

// TestAuthKeyStaysSecret runs keyed calls, good and bad, then looks for
// the raw authKey in everything the join API wrote: its log (every
// verbosity) and every table of the room's database. Tickets must not be
// logged either.
func TestAuthKeyStaysSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const key = "s3cret-Auth-Key-that-must-never-leak"
	var tickets []string
	for range 2 {
		resp, _ := verify(t, e.join("demo", JoinRequest{AuthKey: key}), keys, "demo", "demo-town")
		tickets = append(tickets, resp.Ticket)
	}
	c := e.createCharacter(key, CreateCharacterRequest{Name: "Ayla", Active: true}, http.StatusCreated)
	resp, _ := verify(t, e.join("demo", JoinRequest{AuthKey: key, CharacterID: c.ID}), keys, "demo", "demo-town")
	tickets = append(tickets, resp.Ticket)
	e.characters(key)
	e.character(key, c.ID)
	e.join("demo", `{"authKey": "`+key+`", "extra": true}`)
	e.join("demo", `{"authKey": "`+key+`"`)
	e.join("demo", JoinRequest{AuthKey: key, CharacterID: "c-missing"})
	e.join("demo", JoinRequest{AuthKey: key, Map: "swamp"})
	want(t, "delete", e.deleteCharacter(key, c.ID), http.StatusNoContent, "")

	logs := e.log.String()
	if !strings.Contains(logs, UserID(key)) {
		t.Fatalf("the log does not mention the user at all, so this test proves nothing:\n%s", logs)
	}
	if strings.Contains(logs, key) {
		t.Fatalf("the authKey is in the log:\n%s", logs)
	}
	for _, ticket := range tickets {
		if strings.Contains(logs, ticket) {
			t.Fatalf("a ticket is in the log:\n%s", logs)
		}
	}
	if tables := e.tablesHolding(key); len(tables) > 0 {
		t.Fatalf("the authKey is stored in %v", tables)
	}
	if tables := e.tablesHolding(UserID(key)); len(tables) == 0 {
		t.Fatal("the user id is stored nowhere, so the table scan proves nothing")
	}
}

// tablesHolding lists the tables of the env's database with a row whose
// text form (every column) contains s.
func (e *env) tablesHolding(s string) []string {
	e.t.Helper()
	db, err := store.OpenDB(e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(e.ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		e.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			e.t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil || len(tables) < 5 {
		e.t.Fatalf("found tables %v (%v): the schema is missing", tables, err)
	}
	var holding []string
	for _, table := range tables {
		var n int
		q := `SELECT count(*) FROM ` + pq.QuoteIdentifier(table) + ` AS r WHERE strpos(r::text, $1) > 0`
		if err := db.QueryRowContext(e.ctx, q, s).Scan(&n); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			holding = append(holding, table)
		}
	}
	return holding
}

// TestAuthKeyWhitespaceIsOneUser: the same key with white space around
// it, in a join body or a bearer header, is one user with one set of
// characters.
func TestAuthKeyWhitespaceIsOneUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const key = "alice-auth-key-0123456789"

	_, first := verify(t, e.join("demo", JoinRequest{AuthKey: " " + key}), keys, "demo", "demo-town")
	if first.Subject != UserID(key) {
		t.Fatalf("a join with %q is user %s, want %s", " "+key, first.Subject, UserID(key))
	}
	for _, variant := range []string{key, key + "\n", "\t" + key + " ", "\u00a0" + key + "\u3000"} {
		_, c := verify(t, e.join("demo", JoinRequest{AuthKey: variant}), keys, "demo", "demo-town")
		if c.Subject != first.Subject || c.Character != first.Character {
			t.Fatalf("a join with %q plays %s as %s, want %s as %s", variant, c.Character, c.Subject, first.Character, first.Subject)
		}
	}
	for _, header := range []string{"Bearer " + key, "Bearer   " + key + "  ", "Bearer \t" + key} {
		list := e.charactersWithHeader(header)
		if len(list) != 1 || list[0].ID != first.Character {
			t.Fatalf("Authorization %q lists %+v, want the character the joins made (%s)", header, list, first.Character)
		}
	}
	bram := e.createCharacter(key+" ", CreateCharacterRequest{Name: "Bram"}, http.StatusCreated)
	_, c := verify(t, e.join("demo", JoinRequest{AuthKey: "\n" + key, CharacterID: bram.ID}), keys, "demo", "demo-town")
	if c.Character != bram.ID || c.Subject != first.Subject {
		t.Fatalf("joining Bram with the padded key: %+v", c)
	}
	if n := e.count(`SELECT count(DISTINCT user_id) FROM characters`); n != 1 {
		t.Fatalf("%d users in the database, want 1", n)
	}
	_, guest := verify(t, e.join("demo", JoinRequest{AuthKey: " \t "}), keys, "demo", "demo-town")
	if !strings.HasPrefix(guest.Subject, GuestPrefix) {
		t.Fatalf("a key of white space only joined as %s, want a guest", guest.Subject)
	}
}

// charactersWithHeader lists the characters in the room "demo" with a raw
// Authorization header.
func (e *env) charactersWithHeader(authorization string) []Character {
	e.t.Helper()
	r := e.doHeader(http.MethodGet, e.roomPath("demo")+"/characters", authorization)
	want(e.t, "list characters", r, http.StatusOK, "")
	var list CharacterList
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatalf("list %s: %v", r, err)
	}
	return list.Characters
}

// exec runs a statement on the env's database.
func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	db, err := store.OpenDB(e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(e.ctx, query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

// TestDeletingACharacterReleasesWhatItsRoomsPacksKeep: the items a deleted
// character held of a kind the room's packs keep by a critical-item
// policy are released for their map to bring back (destroyed, audited);
// the rest go with it. The packs are the policies' one source: a room
// whose pack (a GameContent) drops the key's policy deletes the key too.
func TestDeletingACharacterReleasesWhatItsRoomsPacksKeep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keyless, _ := content.Named("crypt")
	keyless.Name, keyless.Critical = "keyless", nil
	e.publishPack(e.ns, keyless)
	for room, pack := range map[string]string{"demo": "crypt", "other": "keyless"} {
		e.createRoom(room, withDatabase(), func(r *gamev1.GameRoom) { r.Spec.Maps[0].Config.Content = pack })
	}
	const key = "alice-auth-key-0123456789"
	e.eventually(http.StatusOK, "", func() reply { return e.do(http.MethodGet, e.roomPath("demo")+"/characters", key, nil) })
	for _, room := range []string{"demo", "other"} {
		r := e.do(http.MethodPost, e.roomPath(room)+"/characters", key, CreateCharacterRequest{Name: "Holder"})
		var c Character
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &c) != nil {
			t.Fatalf("%s: create: %s", room, r)
		}
		keyID, swordID := room+"/key", room+"/sword"
		e.exec(`INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision) VALUES ($1, 'crypt key', 'character', $3, 1),
($2, 'rusty sword', 'character', $3, 1)`, keyID, swordID, c.ID)
		if r := e.do(http.MethodDelete, e.roomPath(room)+"/characters/"+c.ID, key, nil); r.status != http.StatusNoContent {
			t.Fatalf("%s: delete: %s", room, r)
		}
		released := e.count(fmt.Sprintf(`SELECT count(*) FROM item_ownership WHERE item_id = '%s' AND owner_kind = 'destroyed'`, keyID))
		audited := e.count(fmt.Sprintf(`SELECT count(*) FROM item_recovery_audit WHERE item_id = '%s' AND reason = 'owner_deleted'`, keyID))
		swords := e.count(fmt.Sprintf(`SELECT count(*) FROM item_ownership WHERE item_id = '%s'`, swordID))
		wantKept := map[string]int{"demo": 1, "other": 0}[room]
		if released != wantKept || audited != wantKept || swords != 0 {
			t.Errorf("%s: key released %d, audited %d, swords left %d: want %d, %d, 0", room, released, audited, swords, wantKept, wantKept)
		}
	}
}
