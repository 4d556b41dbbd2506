package roomserver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// BenchmarkResume measures taking back a dropped seat over a real
// WebSocket on loopback: dial, hello with the resume token, welcome. It
// reports the end-to-end p99 (client dial and map rebuild included) and
// the server-side p99 bucket from roomkeeper_roomserver_hello_duration_seconds.
func BenchmarkResume(b *testing.B) {
	h := newHarness(b, nil)
	c, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket()}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var durations []time.Duration
	for b.Loop() {
		token := c.Welcome().ResumeToken // a token works once: the welcome brings the next
		_ = c.Drop()
		start := time.Now()
		c, err = client.Dial(context.Background(), h.url, protocol.Hello{Resume: token}, client.Options{})
		if err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "e2e-p99-us")
	b.ReportMetric(serverP99(b, h.srv, "resume")*1e6, "server-p99-us<=")
	_ = c.Close()
}

// BenchmarkResumeOnAReplacementPod measures a resume on the pod that
// replaced a crashed one, which holds no seat: the token verified, its id
// spent and the lease taken in Postgres, the character loaded from its
// checkpoint and seated. Each iteration starts a new pod (outside the
// timer) and the player resumes there with its newest token. Run it with
// a fixed -benchtime (50x): every iteration builds a map.
func BenchmarkResumeOnAReplacementPod(b *testing.B) {
	db, _ := newDB(b)
	keys := newKeys(b)
	h := persistentHarness(b, db, keys, nil)
	waitReady(b, h)
	c, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket(character("bea"))}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var durations []time.Duration
	var server []float64
	for range b.N {
		b.StopTimer()
		token := c.Welcome().ResumeToken
		_ = c.Drop()
		h.crash()
		h = persistentHarness(b, db, keys, nil)
		waitReady(b, h)
		b.StartTimer()
		start := time.Now()
		if c, err = client.Dial(context.Background(), h.url, protocol.Hello{Resume: token}, client.Options{}); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
		server = append(server, serverP99(b, h.srv, "resume_restored"))
	}
	slices.Sort(durations)
	slices.Sort(server)
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "e2e-p99-us")
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "e2e-p50-us")
	b.ReportMetric(server[len(server)*99/100]*1e6, "server-p99-us<=")
	_ = c.Close()
}

// serverP99 is the upper bound of the histogram bucket holding the p99 of
// hello handling in mode.
func serverP99(b *testing.B, srv *Server, mode string) float64 {
	families, err := srv.metrics.registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "roomkeeper_roomserver_hello_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() != mode {
				continue
			}
			h := m.GetHistogram()
			for _, bucket := range h.GetBucket() {
				if float64(bucket.GetCumulativeCount()) >= 0.99*float64(h.GetSampleCount()) {
					return bucket.GetUpperBound()
				}
			}
		}
	}
	return math.Inf(1)
}

// BenchmarkCriticalAck measures durable critical actions end to end over a
// real WebSocket with a real Postgres: pick an item up, drop it, again.
// Each ack comes only after the commit. Reported: p50 and p99 from
// command to ack.
func BenchmarkCriticalAck(b *testing.B) {
	if pgErr != nil {
		b.Fatalf("no test Postgres: %v", pgErr)
	}
	dsn, err := pg.NewDatabase(fmt.Sprintf("bench%d", dbSeq.Add(1)))
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	h := persistentHarness(b, db, nil, nil)
	waitReady(b, h)
	c := h.join(character("bench"))
	loot := nearestLoot(b, c)
	walkTo(b, c, loot)
	var durations []time.Duration
	timed := func(feature, action string, payload any) protocol.Ack {
		start := time.Now()
		ack := command(b, c, feature, action, payload)
		durations = append(durations, time.Since(start))
		if !ack.OK {
			b.Fatalf("%s.%s: %+v", feature, action, ack)
		}
		return ack
	}
	for b.Loop() {
		ack := timed(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
		item := ack.Inventory[0].ID
		timed(protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item})
		picked := loot.ID
		s := waitFor(b, c, "the dropped item on the ground", func(s client.State) bool { return !s.Sees(picked) && len(lootNear(s)) > 0 })
		loot = lootNear(s)[0]
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-us")
}

func lootNear(s client.State) []protocol.EntityState {
	var out []protocol.EntityState
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && dist(e, s.Self) < 20 {
			out = append(out, e)
		}
	}
	return out
}

// BenchmarkEquipAck times an equip that swaps two swords in the weapon
// slot: reserve, one transaction moving both, ack. The pack's equip
// cooldown is 0 here, so the loop measures the path, not the wait.
func BenchmarkEquipAck(b *testing.B) {
	db, _ := newDB(b)
	pack, _ := content.Named("wilds")
	pack.EquipCooldown = 0
	h := persistentHarness(b, db, nil, func(c *Config) {
		c.Sim.Content = pack
		c.MessagesPerSecond = 10_000 // one client measuring, not a flood
	})
	waitReady(b, h)
	ctx := context.Background()
	if err := db.EnsureCharacter(ctx, "bench", "user-bench"); err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"s1", "s2"} {
		if _, err := db.DB().ExecContext(ctx, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision)
VALUES ($1, 'sword', 'character', 'bench', 1)`, id); err != nil {
			b.Fatal(err)
		}
	}
	c := h.join(character("bench"))
	var durations []time.Duration
	swords := [2]string{"s1", "s2"}
	i := 0
	for b.Loop() {
		start := time.Now()
		ack, err := c.Do(waitCtx(b), protocol.FeatureInventory, protocol.ActionEquip, protocol.InventoryEquip{Item: swords[i%2], Slot: "weapon"})
		if err != nil {
			s := c.Snapshot()
			b.Fatalf("equip %d: %v; closed %v errors %+v last acks %+v", i, err, s.Closed, s.Errors, s.Acks[max(0, len(s.Acks)-3):])
		}
		durations = append(durations, time.Since(start))
		if !ack.OK {
			b.Fatalf("equip %s: %+v", swords[i%2], ack)
		}
		i++
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-us")
}

// BenchmarkHandover measures a rollout's pause as players feel it: 10 or
// 100 players on the pod being replaced, all handed over to the new pod (each
// a transaction on the real Postgres, a transfer message, a reconnect with
// the transfer ticket); per player, the time from the start of the
// handover until its client sees itself on the new pod (the clients share
// this machine's cores with both servers and Postgres). Run it with
// -benchtime 1x: every iteration seats its players anew.
func BenchmarkHandover(b *testing.B) {
	for _, players := range []int{10, 100} {
		b.Run(fmt.Sprint(players, "players"), func(b *testing.B) { benchmarkHandover(b, players) })
	}
}

func benchmarkHandover(b *testing.B, players int) {
	db, dsn := newDB(b)
	nextDB, err := store.Open(context.Background(), dsn) // each pod has its own pool
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = nextDB.Close() })
	keys := newKeys(b)
	var pauses []time.Duration
	var total, sent time.Duration
	for i := range b.N {
		old := persistentHarness(b, db, keys, nil)
		next := persistentHarness(b, nextDB, keys, func(c *Config) { c.TakesOver = true })
		waitReady(b, old)
		waitReady(b, next)
		clients := make([]*client.Client, players)
		for j := range clients {
			// Binary snapshots: 100 JSON decoders would spend the cores
			// the servers measured here need.
			clients[j] = old.dial(protocol.Hello{Ticket: old.ticket(character(fmt.Sprintf("h%d-%d", i, j)))},
				client.Options{Codec: protocol.CodecBinary})
		}
		for _, c := range clients {
			waitFor(b, c, "itself", func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) })
		}
		arrived := make([]time.Duration, players)
		var wg sync.WaitGroup
		start := time.Now()
		for j, c := range clients {
			wg.Go(func() {
				waitFor(b, c, "itself on the new pod", func(s client.State) bool {
					return s.Transfers == 1 && s.Sees(c.Welcome().PlayerID)
				})
				arrived[j] = time.Since(start)
			})
		}
		if n := old.srv.HandOver(context.Background(), next.url); n != players {
			b.Fatalf("handed over %d of %d", n, players)
		}
		sent += time.Since(start)
		wg.Wait()
		total += time.Since(start)
		pauses = append(pauses, arrived...)
		old.crash()
		next.crash()
	}
	slices.Sort(pauses)
	b.ReportMetric(float64(pauses[len(pauses)/2].Milliseconds()), "pause-p50-ms")
	b.ReportMetric(float64(pauses[len(pauses)*99/100].Milliseconds()), "pause-p99-ms")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "handover-ms")
	b.ReportMetric(float64(sent.Milliseconds())/float64(b.N), "all-sent-ms")
}
