package protocol

import "time"

// Bodies of the manager's admin API (docs/operations.md, "Answering a
// player's support ticket"), for roomctl.

// CharacterHistory answers GET .../characters/{id}/history: what the
// room's database keeps of a character, oldest first.
type CharacterHistory struct {
	Character string         `json:"character"`
	Since     time.Time      `json:"since"`
	Entries   []HistoryEntry `json:"entries"`
}

// HistoryEntry is one thing that happened to the character: a
// checkpoint, a transfer, an event (a critical action) or a recovery of
// one of its items.
type HistoryEntry struct {
	At     time.Time `json:"at"`
	What   string    `json:"what"`
	Map    string    `json:"map"`
	Detail string    `json:"detail"`
}

// ReplayReport answers GET .../characters/{id}/replay: each kept
// checkpoint's items re-derived from the one before it and the critical
// events between them.
type ReplayReport struct {
	Character   string       `json:"character"`
	Checked     int          `json:"checked"`
	Skipped     int          `json:"skipped"`
	Divergences []Divergence `json:"divergences"`
}

// Divergence is a checkpoint whose items are not what the replay gives.
type Divergence struct {
	FromRevision int64     `json:"fromRevision"`
	ToRevision   int64     `json:"toRevision"`
	ToMap        string    `json:"toMap"`
	At           time.Time `json:"at"`
	Events       []int64   `json:"events"`
	Derived      []string  `json:"derived"`
	Recorded     []string  `json:"recorded"`
	Missing      []string  `json:"missing"`
	Unexpected   []string  `json:"unexpected"`
}

// A command the admin API sends a map's pod (POST /admin/v1/commands on
// its HTTP port, with an admin ticket).
type AdminCommand struct {
	Action string `json:"action"`
	// User and Character select the seats of a kick or a ban.
	User      string `json:"user,omitempty"`
	Character string `json:"character,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Text is a message's.
	Text string `json:"text,omitempty"`
}

// Admin actions.
const (
	AdminKick    = "kick"
	AdminBan     = "ban"
	AdminSave    = "save"
	AdminMessage = "message"
)

// AdminAnswer says what a command did: the seats kicked, saved or told.
type AdminAnswer struct {
	Affected int `json:"affected"`
}
