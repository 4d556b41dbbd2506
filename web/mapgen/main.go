//go:build js && wasm

// Command mapgen is internal/mapgen compiled to WebAssembly for browsers
// (make web builds it into web/dist/mapgen.wasm). It registers
// globalThis.roomkeeperMapgen with one function, build(configJSON), which
// returns the static world the room server simulates for that MapConfig:
// {world: JSON string, blocked: Uint8Array} or {error: string}. The SDK
// (web/src/world.ts) checks world's hash against welcome.mapHash and
// predicts movement on the blocked grid.
package main

import (
	"encoding/json"
	"syscall/js"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

func main() {
	js.Global().Set("roomkeeperMapgen", js.ValueOf(map[string]any{
		"build": js.FuncOf(build),
	}))
	select {} // the functions live as long as the page
}

// build generates the world of the MapConfig JSON in args[0].
func build(_ js.Value, args []js.Value) any {
	if len(args) != 1 || args[0].Type() != js.TypeString {
		return map[string]any{"error": "build takes the MapConfig as one JSON string"}
	}
	cfg, err := mapgen.ParseConfig([]byte(args[0].String()))
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	w, err := mapgen.Generate(cfg)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	data, err := json.Marshal(describe(w))
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	cells := blockedCells(w)
	blocked := js.Global().Get("Uint8Array").New(len(cells))
	js.CopyBytesToJS(blocked, cells)
	return map[string]any{"world": string(data), "blocked": blocked}
}

// world is what the browser gets of a mapgen.World, in the JSON casing of
// the wire protocol.
type world struct {
	Hash         string     `json:"hash"`
	Width        int32      `json:"width"`
	Height       int32      `json:"height"`
	Biome        string     `json:"biome"`
	CellSize     int        `json:"cellSize"`
	Cols         int        `json:"cols"`
	Rows         int        `json:"rows"`
	Colliders    []collider `json:"colliders"`
	Props        []prop     `json:"props"`
	Portals      []portal   `json:"portals"`
	PlayerSpawn  point      `json:"playerSpawn"`
	PlayerSpawns []point    `json:"playerSpawns"`
	NPCSpawns    []point    `json:"npcSpawns"`
	LootSpawns   []point    `json:"lootSpawns"`
	Rooms        []room     `json:"rooms"`
	Doors        []door     `json:"doors"`
}

type point struct {
	X int32 `json:"x"`
	Y int32 `json:"y"`
}

func points(ps []mapgen.Point) []point {
	out := make([]point, len(ps))
	for i, p := range ps {
		out[i] = point{p.X, p.Y}
	}
	return out
}

type collider struct {
	ID   uint32 `json:"id"`
	Kind string `json:"kind"`
	X    int32  `json:"x"`
	Y    int32  `json:"y"`
	W    int32  `json:"w"`
	H    int32  `json:"h"`
}

type prop struct {
	ID   uint32 `json:"id"`
	Kind string `json:"kind"`
	X    int32  `json:"x"`
	Y    int32  `json:"y"`
}

type portal struct {
	ID     uint32 `json:"id"`
	To     string `json:"to"`
	X      int32  `json:"x"`
	Y      int32  `json:"y"`
	Radius int32  `json:"radius"`
}

// room is a dungeon's chamber; role is "boss", "key" or "".
type room struct {
	ID   uint32 `json:"id"`
	X    int32  `json:"x"`
	Y    int32  `json:"y"`
	W    int32  `json:"w"`
	H    int32  `json:"h"`
	Role string `json:"role"`
}

// door is a gap in a room's wall; room is the index in rooms of the room
// it leads into. Its entity (kind 4) stands at the middle of its cells
// (mapgen.Rect.Centre).
type door struct {
	ID     uint32 `json:"id"`
	Room   int    `json:"room"`
	X      int32  `json:"x"`
	Y      int32  `json:"y"`
	W      int32  `json:"w"`
	H      int32  `json:"h"`
	Locked bool   `json:"locked"`
}

func describe(w *mapgen.World) world {
	cols, rows := w.Cells()
	out := world{Hash: w.Hash, Width: w.Width, Height: w.Height, Biome: w.Config.Biome, CellSize: mapgen.CellSize,
		Cols: cols, Rows: rows, PlayerSpawn: point{w.PlayerSpawn.X, w.PlayerSpawn.Y}, PlayerSpawns: points(w.PlayerSpawns),
		NPCSpawns: points(w.NPCSpawns), LootSpawns: points(w.LootSpawns)}
	for _, c := range w.Colliders {
		out.Colliders = append(out.Colliders, collider{c.ID, c.Kind, c.Rect.X, c.Rect.Y, c.Rect.W, c.Rect.H})
	}
	for _, p := range w.Props {
		out.Props = append(out.Props, prop{p.ID, p.Kind, p.X, p.Y})
	}
	for _, p := range w.Portals {
		out.Portals = append(out.Portals, portal{p.ID, p.To, p.X, p.Y, p.Radius})
	}
	for _, r := range w.Rooms {
		out.Rooms = append(out.Rooms, room{r.ID, r.Rect.X, r.Rect.Y, r.Rect.W, r.Rect.H, r.Role})
	}
	for _, d := range w.Doors {
		out.Doors = append(out.Doors, door{d.ID, d.Room, d.Rect.X, d.Rect.Y, d.Rect.W, d.Rect.H, d.Locked})
	}
	return out
}

// blockedCells is the walkability grid, one byte a cell (1: blocked), row
// by row: what World.Blocked answers for any point of the cell.
func blockedCells(w *mapgen.World) []byte {
	cols, rows := w.Cells()
	cells := make([]byte, cols*rows)
	for cy := range rows {
		for cx := range cols {
			if w.Blocked(float64(cx*mapgen.CellSize), float64(cy*mapgen.CellSize)) {
				cells[cy*cols+cx] = 1
			}
		}
	}
	return cells
}
