package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// The platform operator's commands (docs/operations.md, "Answering a
// player's support ticket"): they call the manager's admin API with a
// Kubernetes bearer token, which the manager reviews, and which must be
// granted the verb on the room's gamerooms/admin.

// defaultAdminAPI is the manager's admin API under make dev, and through
// `kubectl port-forward` to the manager in a cluster.
const defaultAdminAPI = "http://127.0.0.1:8093"

// adminTokenEnv holds the bearer token when --token and --token-file are
// not given.
const adminTokenEnv = "ROOMKEEPER_ADMIN_TOKEN"

// adminFlags say which admin API, which room, and who asks.
type adminFlags struct {
	api, namespace, room, token, tokenFile string
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.api, "admin-api", defaultAdminAPI, "the manager's admin API (kubectl -n roomkeeper-system port-forward deploy/roomkeeper-controller-manager 8093)")
	fs.StringVar(&a.namespace, "namespace", "default", "the GameRoom's namespace")
	fs.StringVar(&a.room, "room", "", "the GameRoom's name")
	fs.StringVar(&a.token, "token", "", "a Kubernetes bearer token granted gamerooms/admin (default: $"+adminTokenEnv+"; e.g. kubectl create token SA)")
	fs.StringVar(&a.tokenFile, "token-file", "", "read the bearer token from this file")
}

// bearer is the token to send.
func (a *adminFlags) bearer() (string, error) {
	switch {
	case a.token != "":
		return a.token, nil
	case a.tokenFile != "":
		raw, err := os.ReadFile(a.tokenFile)
		return strings.TrimSpace(string(raw)), err
	case os.Getenv(adminTokenEnv) != "":
		return os.Getenv(adminTokenEnv), nil
	}
	return "", fmt.Errorf("no token: give --token, --token-file or $%s (kubectl create token SA, for a ServiceAccount granted gamerooms/admin)", adminTokenEnv)
}

// get calls GET path (under the room) and decodes the answer into out.
func (a *adminFlags) get(ctx context.Context, path string, query url.Values, out any) error {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return a.do(ctx, http.MethodGet, path, nil, out)
}

// do calls method path (under the room) with body as JSON (nil: none)
// and decodes the answer into out.
func (a *adminFlags) do(ctx context.Context, method, path string, body, out any) error {
	if a.room == "" {
		return errors.New("--room is required")
	}
	token, err := a.bearer()
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/admin/v1/namespaces/%s/gamerooms/%s/%s", strings.TrimSuffix(a.api, "/"),
		url.PathEscape(a.namespace), url.PathEscape(a.room), path)
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e protocol.Error
		if json.Unmarshal(raw, &e) == nil && e.Message != "" {
			return fmt.Errorf("admin API: %s (%s, HTTP %d)", e.Message, e.Code, resp.StatusCode)
		}
		return fmt.Errorf("admin API: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return json.Unmarshal(raw, out)
}

// runHistory prints what the database keeps of a character, in time order.
func runHistory(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "character" {
		return errors.New("usage: roomctl history character ID --room R [--since 24h]")
	}
	fs := flag.NewFlagSet("history character", flag.ContinueOnError)
	var a adminFlags
	a.register(fs)
	since := fs.Duration("since", 24*time.Hour, "how far back")
	limit := fs.Int("limit", 0, "entries at most (0: the admin API's 1,000)")
	id, rest := "", args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") { // the id before the flags, as the usage shows it
		id, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if id == "" || fs.NArg() != 0 {
		return errors.New("history character takes one character id")
	}
	q := url.Values{"since": {since.String()}}
	if *limit > 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	var h protocol.CharacterHistory
	if err := a.get(ctx, "characters/"+url.PathEscape(id)+"/history", q, &h); err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tWHAT\tMAP\tDETAIL")
	for _, e := range h.Entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339Nano), e.What, e.Map, e.Detail)
	}
	return w.Flush()
}

// runAudit runs the replay check of a character's items: each kept
// checkpoint re-derived from the one before it and the critical events
// between. A divergence is an error (exit 1), listed.
func runAudit(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "replay" {
		return errors.New("usage: roomctl audit replay --character ID --room R")
	}
	fs := flag.NewFlagSet("audit replay", flag.ContinueOnError)
	var a adminFlags
	a.register(fs)
	character := fs.String("character", "", "the character's id")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *character == "" {
		return errors.New("--character is required")
	}
	var r protocol.ReplayReport
	if err := a.get(ctx, "characters/"+url.PathEscape(*character)+"/replay", nil, &r); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d checkpoint pairs replayed, %d skipped (no items recorded, or events pruned), %d divergences\n",
		r.Character, r.Checked, r.Skipped, len(r.Divergences))
	for _, d := range r.Divergences {
		fmt.Fprintf(stdout, "revision %d -> %d on %s at %s: events %v give %v, the checkpoint has %v (missing %v, unexpected %v)\n",
			d.FromRevision, d.ToRevision, d.ToMap, d.At.UTC().Format(time.RFC3339), d.Events, d.Derived, d.Recorded, d.Missing, d.Unexpected)
	}
	if len(r.Divergences) > 0 {
		return fmt.Errorf("%d divergences in %s's items", len(r.Divergences), r.Character)
	}
	return nil
}

// moderationAnswer is the admin API's answer to a moderation command.
type moderationAnswer struct {
	Affected int               `json:"affected"`
	Maps     []string          `json:"maps"`
	Failed   map[string]string `json:"failed"`
	Until    *time.Time        `json:"until"`
}

// runAdmin acts on a room's players: kick, ban, unban, save, message
// (docs/operations.md, "Moderation"). A map that could not be told is an
// error, after the others were.
func runAdmin(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: roomctl admin (kick | ban | unban | save | message) --room R [flags]")
	}
	fs := flag.NewFlagSet("admin "+args[0], flag.ContinueOnError)
	var a adminFlags
	a.register(fs)
	user := fs.String("user", "", "the user (kick, ban, unban)")
	character := fs.String("character", "", "the character (kick)")
	reason := fs.String("reason", "", "why, recorded and told to the player (kick, ban)")
	duration := fs.Duration("duration", 0, "how long a ban lasts (72h)")
	mapName := fs.String("map", "", "the MapInstance to save or message (default: every map of the room)")
	text := fs.String("text", "", "the message")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	body := map[string]string{"user": *user, "character": *character, "reason": *reason, "map": *mapName, "text": *text}
	if *duration > 0 {
		body["duration"] = duration.String()
	}
	for k, v := range body {
		if v == "" {
			delete(body, k)
		}
	}
	method, path, payload := http.MethodPost, args[0], any(body)
	switch args[0] {
	case "kick", "save", "message":
	case "ban":
		path = "bans"
	case "unban":
		method, path, payload = http.MethodDelete, "bans/"+url.PathEscape(*user), nil
	default:
		return fmt.Errorf("unknown admin command %q: kick, ban, unban, save or message", args[0])
	}
	var answer moderationAnswer
	if err := a.do(ctx, method, path, payload, &answer); err != nil {
		return err
	}
	return printModeration(args[0], answer)
}

// printModeration says what a command did, and fails when a map missed it.
func printModeration(command string, a moderationAnswer) error {
	if command == "unban" {
		_, err := fmt.Fprintln(stdout, "ban lifted")
		return err
	}
	fmt.Fprintf(stdout, "%s: %d players on %d maps %v\n", command, a.Affected, len(a.Maps), a.Maps)
	if a.Until != nil {
		fmt.Fprintf(stdout, "banned until %s\n", a.Until.UTC().Format(time.RFC3339))
	}
	if len(a.Failed) > 0 {
		return fmt.Errorf("%d maps were not told: %v", len(a.Failed), a.Failed)
	}
	return nil
}
