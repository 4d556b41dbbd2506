package adminapi

import (
	"fmt"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// defaultHistory is how far back a history goes without ?since.
const defaultHistory = 24 * time.Hour

// history answers a character's timeline since ?since (a duration back,
// 24h by default), at most ?limit entries.
func (s *Server) history(req request) (any, error) {
	back := defaultHistory
	if raw := req.r.URL.Query().Get("since"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return nil, &badRequest{fmt.Sprintf("since %q: want a positive duration such as 72h", raw)}
		}
		back = d
	}
	limit := 0
	if raw := req.r.URL.Query().Get("limit"); raw != "" {
		if _, err := fmt.Sscan(raw, &limit); err != nil || limit <= 0 || limit > 100000 {
			return nil, &badRequest{fmt.Sprintf("limit %q: want 1 to 100000", raw)}
		}
	}
	id := req.r.PathValue("id")
	since := time.Now().Add(-back)
	entries, err := req.db.CharacterTimeline(req.ctx, id, since, limit)
	if err != nil {
		return nil, err
	}
	out := protocol.CharacterHistory{Character: id, Since: since, Entries: make([]protocol.HistoryEntry, len(entries))}
	for i, e := range entries {
		out.Entries[i] = protocol.HistoryEntry{At: e.At, What: e.What, Map: e.Map, Detail: e.Detail}
	}
	return out, nil
}

// replay answers the replay check of a character's kept checkpoints.
func (s *Server) replay(req request) (any, error) {
	r, err := req.db.ReplayCharacter(req.ctx, req.r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	out := protocol.ReplayReport{Character: r.CharacterID, Checked: r.Checked, Skipped: r.Skipped,
		Divergences: make([]protocol.Divergence, len(r.Divergences))}
	for i, d := range r.Divergences {
		out.Divergences[i] = protocol.Divergence{FromRevision: d.From.Revision, ToRevision: d.To.Revision, ToMap: d.To.MapInstance,
			At: d.To.At, Events: d.Events, Derived: d.Derived, Recorded: d.To.Items, Missing: d.Missing, Unexpected: d.Unexpected}
	}
	return out, nil
}
