// Package serverlog reads the JSON log of a room-server process that a
// tool or a test started: the addresses of its "Serving" line, and its
// newest lines for failure messages.
package serverlog

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// ServingMessage is the message of the line the room server logs once it
// listens, with its addresses in the game and http attributes.
const ServingMessage = "Serving"

// Addrs are the addresses a Serving line reports.
type Addrs struct{ Game, HTTP string }

// Serving parses line as the room server's Serving line.
func Serving(line []byte) (Addrs, bool) {
	var entry struct{ Msg, Game, HTTP string }
	if json.Unmarshal(line, &entry) != nil || entry.Msg != ServingMessage {
		return Addrs{}, false
	}
	return Addrs{Game: entry.Game, HTTP: entry.HTTP}, true
}

// Tail keeps the newest lines of a log. It is safe for concurrent use.
type Tail struct {
	max   int
	mu    sync.Mutex
	lines []string
}

// NewTail returns a Tail that keeps the newest max lines.
func NewTail(max int) *Tail { return &Tail{max: max} }

// Follow reads log to its end, keeping its newest lines, and sends the
// addresses of its first Serving line to serving, which must have room
// for one. A line too long to keep is skipped, never left unread, so the
// process never blocks on its log.
func (t *Tail) Follow(log io.Reader, serving chan<- Addrs) {
	lines := bufio.NewScanner(log)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for lines.Scan() {
		if !found {
			var addrs Addrs
			if addrs, found = Serving(lines.Bytes()); found {
				serving <- addrs
			}
		}
		t.add(lines.Text())
	}
	_, _ = io.Copy(io.Discard, log)
}

func (t *Tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// String is the kept lines, one per line.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
