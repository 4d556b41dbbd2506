package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// ContentCache keeps the content definitions of the rooms it is asked
// for (docs/joinapi.md, content) and asks the join API again with their
// ETag: a room whose definitions did not change costs a 304 without a
// body. A welcome's ContentHash names its map's pack (RoomContent.Pack).
// It is safe for concurrent use.
type ContentCache struct {
	// API is the join API asked.
	API *JoinAPI

	mu    sync.Mutex
	rooms map[string]RoomContent // by namespace/room
}

// Content is the room's content definitions as the join API has them now.
func (c *ContentCache) Content(ctx context.Context, namespace, room string) (RoomContent, error) {
	key := namespace + "/" + room
	c.mu.Lock()
	cached, known := c.rooms[key]
	c.mu.Unlock()
	req, err := c.API.request(ctx, http.MethodGet, roomURL(namespace, room)+"/content", "", nil)
	if err != nil {
		return RoomContent{}, err
	}
	if known {
		req.Header.Set("If-None-Match", `"`+cached.Hash+`"`)
	}
	status, data, err := c.API.send(req)
	switch {
	case err != nil:
		return RoomContent{}, err
	case status == http.StatusNotModified && known:
		return cached, nil
	}
	var fresh RoomContent
	if err := json.Unmarshal(data, &fresh); err != nil {
		return RoomContent{}, fmt.Errorf("join API: decoding the content: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rooms == nil {
		c.rooms = map[string]RoomContent{}
	}
	c.rooms[key] = fresh
	return fresh, nil
}
