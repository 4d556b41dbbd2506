package roomserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// adminTicket is an admin ticket of the harness's map, as the manager's
// admin API signs one.
func (h *harness) adminTicket() string {
	h.t.Helper()
	raw, _, err := h.signer.Sign(token.Claims{Type: token.TypeAdmin, Subject: "system:serviceaccount:games:mod",
		Character: token.AdminCharacter, Room: "demo", Map: h.cfg.Instance}, 10*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	return raw
}

// command posts an admin command with the ticket ("" for none).
func (h *harness) command(ticket string, cmd protocol.AdminCommand) (int, protocol.AdminAnswer) {
	h.t.Helper()
	body, _ := json.Marshal(cmd)
	req, err := http.NewRequest(http.MethodPost, h.http.URL+AdminPath, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if ticket != "" {
		req.Header.Set("Authorization", "Bearer "+ticket)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer protocol.AdminAnswer
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	return resp.StatusCode, answer
}

// closeOf waits for c's connection to end and returns its close error.
func closeOf(t *testing.T, c *client.Client) *websocket.CloseError {
	t.Helper()
	s, _ := c.WaitFor(waitCtx(t), func(s client.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if !errors.As(s.Closed, &ce) {
		t.Fatalf("the connection ended with %v, want a close frame", s.Closed)
	}
	return ce
}

// TestAKickEndsTheSessionAndKeepsWhatWasAcked: only an admin ticket of
// this map, used once, runs a command; a kick closes the session with
// 4001 kicked, the pickup acknowledged before it stays the player's and
// its state is saved; the player may join again.
func TestAKickEndsTheSessionAndKeepsWhatWasAcked(t *testing.T) {
	db, h, c, loot := atLoot(t, "kim", nil)
	ack := pickup(t, c, loot)
	if !ack.OK {
		t.Fatalf("pickup: %+v", ack)
	}
	kick := protocol.AdminCommand{Action: protocol.AdminKick, Character: "kim", Reason: "testing"}
	if code, _ := h.command("", kick); code != http.StatusUnauthorized {
		t.Errorf("no ticket: %d, want 401", code)
	}
	if code, _ := h.command(h.ticket(character("kim")), kick); code != http.StatusUnauthorized {
		t.Errorf("a join ticket: %d, want 401", code)
	}
	ticket := h.adminTicket()
	code, answer := h.command(ticket, kick)
	if code != http.StatusOK || answer.Affected != 1 {
		t.Fatalf("kick: %d %+v, want one seat kicked", code, answer)
	}
	if ce := closeOf(t, c); ce.Code != protocol.CloseKicked || ce.Text != string(protocol.CodeKicked) {
		t.Errorf("closed with %d %q, want %d kicked", ce.Code, ce.Text, protocol.CloseKicked)
	}
	if code, _ := h.command(ticket, kick); code != http.StatusUnauthorized {
		t.Errorf("the same ticket again: %d, want 401 (used once)", code)
	}
	items, err := db.ItemsOf(context.Background(), "kim")
	if err != nil || len(items) != 1 || items[0].ItemID != ack.Inventory[0].ID {
		t.Errorf("kim's items after the kick: %+v %v, want the acked pickup", items, err)
	}
	poll(t, func() error { // the seat was released like a grace's end: the lease is free
		_, err := db.ClaimLease(context.Background(), "kim", "other-map", "probe", time.Millisecond, time.Now())
		return err
	})
	again := h.join(character("kim"))
	waitFor(t, again, "kim back in the world", func(s client.State) bool { return s.Sees(again.Welcome().PlayerID) })
}

// TestABannedUserCannotJoinOrResume: a ban ends the user's session (4001
// banned) and refuses its joins and resumes until it ends.
func TestABannedUserCannotJoinOrResume(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	c := h.join(character("lee"))
	resume := c.Welcome().ResumeToken
	if err := db.BanUser(context.Background(), store.Ban{UserID: "user-lee", Until: time.Now().Add(time.Hour), Reason: "griefing", BannedBy: "mod"}); err != nil {
		t.Fatal(err)
	}
	if code, answer := h.command(h.adminTicket(), protocol.AdminCommand{Action: protocol.AdminBan, User: "user-lee"}); code != http.StatusOK || answer.Affected != 1 {
		t.Fatalf("ban: %d %+v", code, answer)
	}
	if ce := closeOf(t, c); ce.Code != protocol.CloseKicked || ce.Text != string(protocol.CodeBanned) {
		t.Errorf("closed with %d %q, want %d banned", ce.Code, ce.Text, protocol.CloseKicked)
	}
	h.refused(protocol.Hello{Ticket: h.ticket(character("lee"))}, protocol.CodeBanned)
	h.refused(protocol.Hello{Resume: resume}, protocol.CodeBanned)

	if _, err := db.LiftBan(context.Background(), "user-lee"); err != nil {
		t.Fatal(err)
	}
	h.join(character("lee")) // welcome again
}

// TestAMessageReachesEveryoneAndASaveWritesNow: a system message reaches
// every player of the map; a save writes their checkpoints at once.
func TestAMessageReachesEveryoneAndASaveWritesNow(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, func(c *Config) { c.CheckpointInterval = time.Hour })
	waitReady(t, h)
	a, b := h.join(character("may")), h.join(character("ned"))
	moved := walk(t, a, 1, 0, 6).Self
	if code, answer := h.command(h.adminTicket(), protocol.AdminCommand{Action: protocol.AdminMessage, Text: "restart at 18:00"}); code != http.StatusOK || answer.Affected != 2 {
		t.Fatalf("message: %d %+v", code, answer)
	}
	for _, c := range []*client.Client{a, b} {
		waitFor(t, c, "the system message", func(s client.State) bool {
			return slices.ContainsFunc(s.Events, func(e protocol.Event) bool {
				return e.Type == protocol.EventSystemMessage && e.Detail == "restart at 18:00"
			})
		})
	}
	if code, answer := h.command(h.adminTicket(), protocol.AdminCommand{Action: protocol.AdminSave}); code != http.StatusOK || answer.Affected != 2 {
		t.Fatalf("save: %d %+v", code, answer)
	}
	waitSaved(t, db, "may", moved) // written now, not in an hour
}
