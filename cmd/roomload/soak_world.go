package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// The world invariant (docs/operations.md, "Soak and chaos"): a fault
// never sets a map's world back. Before each fault the soak notes what
// every map's heartbeat says its world reached (status.world); once the
// fault is over and each map reports a world checkpoint written after it,
// the world is where it was or further: its tick not before the noted
// checkpoint's, no cleared room un-cleared, no boss healed or back in an
// earlier phase (unless it died meanwhile).

// worldMarks are the soak's maps' worlds as their status says, by name,
// with when the heartbeat that said so came.
type worldMarks map[string]worldMark

type worldMark struct {
	gamev1.WorldCheckpoint
	heard time.Time
}

// markWorlds reads every soak map's status.world; a map that reports none
// yet is left out.
func (s *soak) markWorlds(ctx context.Context) worldMarks {
	marks := worldMarks{}
	byName, err := s.maps(ctx)
	if err != nil {
		return marks
	}
	for _, name := range s.instances() {
		if mi, ok := byName[name]; ok && mi.Status.World != nil {
			m := worldMark{WorldCheckpoint: *mi.Status.World}
			if mi.Status.LastHeartbeat != nil {
				m.heard = mi.Status.LastHeartbeat.Time
			}
			marks[name] = m
		}
	}
	return marks
}

// worldSettle bounds the wait for every map to report its world in a
// status heartbeat after a fault: the new pod's first, a few seconds
// after it restored the world; the others' next, which comes at least
// once a heartbeat timeout (docs/operations.md, "Heartbeats").
func (s *soak) worldSettle() time.Duration {
	return worldSettleMargin + cmp.Or(s.cfg.heartbeatTimeout, gamev1.DefaultHeartbeatTimeout)
}

// worldSettleMargin is what worldSettle allows beyond a heartbeat
// timeout: a new pod's start and restore on a busy node.
const worldSettleMargin = 30 * time.Second

// checkWorlds waits until every map noted before the fault at since has
// reported its world in a heartbeat after it (a replaced map: its new
// pod's, which restored it), and checks none went back.
func (s *soak) checkWorlds(ctx context.Context, before worldMarks, since time.Time, r *soakReport) {
	var after worldMarks
	err := poll(ctx, s.worldSettle(), func() error {
		after = s.markWorlds(ctx)
		for name := range before {
			if w, ok := after[name]; !ok || !w.heard.After(since) {
				return fmt.Errorf("%s reports no world in a heartbeat since %s", name, since.Format(time.RFC3339))
			}
		}
		return nil
	})
	if err != nil {
		r.violate("world: %v", err)
		return
	}
	for name, was := range before {
		for _, v := range worldSetBack(was.WorldCheckpoint, after[name].WorldCheckpoint) {
			r.violate("world of %s: %s", name, v)
		}
	}
}

// worldSetBack lists how now is behind was.
func worldSetBack(was, now gamev1.WorldCheckpoint) []string {
	var back []string
	if now.Tick < was.Tick {
		back = append(back, fmt.Sprintf("tick %d, before the fault %d", now.Tick, was.Tick))
	}
	if now.RoomsCleared < was.RoomsCleared {
		back = append(back, fmt.Sprintf("%d rooms cleared, before the fault %d", now.RoomsCleared, was.RoomsCleared))
	}
	if was.BossPhase > 0 && now.BossPhase > 0 && (now.BossPhase < was.BossPhase || now.BossHP > was.BossHP) {
		back = append(back, fmt.Sprintf("the boss in phase %d at %d hp, before the fault phase %d at %d hp",
			now.BossPhase, now.BossHP, was.BossPhase, was.BossHP))
	}
	return back
}
