package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// botReport is what one bot measured.
type botReport struct {
	rtts       []time.Duration
	bytes      int
	snapshots  int
	reconnects int
	err        error
	portals    portalReport
	fights     fightReport
}

// runBots connects count bots that wander and ping, for duration, then
// prints round-trip percentiles and downstream bytes per second.
func runBots(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bots", flag.ContinueOnError)
	var t ticketFlags
	t.register(fs)
	var j joinflags.Flags
	j.Register(fs)
	j.RegisterMap(fs)
	keyPrefix := fs.String("auth-key-prefix", "", "with --join-api, bot i joins with the authKey PREFIX-i (default: guests)")
	endpoint := fs.String("endpoint", "", "the map's WebSocket URL")
	count := fs.Int("count", 10, "bots to run")
	duration := fs.Duration("duration", 30*time.Second, "how long they play")
	codec := fs.String("codec", protocol.CodecBinary, "snapshot codec: json or binary")
	inputRate := fs.Int("input-rate", 10, "movement messages per second per bot; each carries the ticks since the last")
	portalRate := fs.Float64("portal-rate", 0, "portal trips per bot per minute: a bot heads for its map's nearest portal and walks through (0: never)")
	behavior := fs.String("behavior", behaviorWander, "wander (walk about) or fight (seek and attack NPCs, cast the pack's enemy abilities at them, use a potion when hurt, pick up what they drop, open doors, explore a dungeon's rooms)")
	enter := fs.String("enter", "", "a bot first walks through its map's portal to this map (how an instanced map is entered; with --party, the party's instance)")
	untilCleared := fs.Bool("until-cleared", false, "with --behavior fight: a bot stops once it has seen every guarded room of its dungeon cleared (the boss's too)")
	untilBossPhase := fs.Int("until-boss-phase", 0, "with --behavior fight: a bot stops once it has seen its dungeon's boss enter this phase (a boss_phase event; 1: below its first threshold)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	j.Instance = t.instance
	if *behavior != behaviorWander && *behavior != behaviorFight {
		return fmt.Errorf("--behavior %q: want %s or %s", *behavior, behaviorWander, behaviorFight)
	}
	useDefaultJoinAPI(&j, &t, *endpoint)
	if (*endpoint == "" && j.URL == "") || *count < 1 || *inputRate < 1 || *portalRate < 0 {
		return errors.New("need --endpoint or --join-api, --count >= 1, --input-rate >= 1 and --portal-rate >= 0")
	}
	if j.URL != "" {
		if err := checkExclusive(&t, *endpoint); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	plan := botPlan{*inputRate, *portalRate, *behavior, *enter, *untilCleared, *untilBossPhase, nil, nil}
	if plan.behavior == behaviorFight && j.URL != "" {
		plan.usable, plan.bolts = roomArsenal(ctx, &j, t.room)
	}
	reports := make([]botReport, *count)
	start := time.Now() // bots that stop early (--until-cleared) make the run shorter
	var wg sync.WaitGroup
	for i := range reports {
		getSeat, reconnect, err := botSeat(&t, &j, *endpoint, *keyPrefix, i)
		if err != nil {
			return err
		}
		opts := j.ClientOptions(*codec)
		opts.Reconnect = reconnect
		wg.Add(1)
		go func() {
			defer wg.Done()
			endpoint, ticket, err := getSeat(ctx)
			if err != nil {
				reports[i] = botReport{err: err}
				return
			}
			reports[i] = runBot(ctx, endpoint, ticket, opts, plan)
		}()
	}
	wg.Wait()
	if failed := printBotReport(reports, min(*duration, time.Since(start))); failed > 0 {
		return fmt.Errorf("%d of %d bots failed", failed, len(reports))
	}
	return nil
}

// botSeat says how bot i gets its endpoint and ticket, and, through the
// join API, how it comes back by itself after a crash or drain of its map.
// A locally minted ticket is made now; the join API is asked by the bot
// itself, just before it connects, so that a queue of bots waiting out the
// join API's rate limit does not hold tickets that expire meanwhile.
func botSeat(t *ticketFlags, j *joinflags.Flags, endpoint, keyPrefix string, i int) (func(context.Context) (string, string, error), *client.Reconnect, error) {
	if j.URL == "" {
		ticket, err := t.get()
		return func(context.Context) (string, string, error) { return endpoint, ticket, nil }, nil, err
	}
	key := ""
	if keyPrefix != "" {
		key = fmt.Sprintf("%s-%d", keyPrefix, i)
	}
	bot := *j
	bot.Party = strings.ReplaceAll(j.Party, "{bot}", strconv.Itoa(i)) // one party per bot, or one for all
	join := func(ctx context.Context) (string, string, error) {
		resp, err := bot.Join(ctx, t.room, key, "")
		return resp.Endpoint, resp.Ticket, err
	}
	reconnect := bot.API().Reconnect(bot.Namespace, t.room, client.JoinRequest{})
	reconnect.Rejoin = join // in the bot's party again
	return join, reconnect, nil
}

// botPlan is how a bot plays.
type botPlan struct {
	inputRate    int
	portalRate   float64
	behavior     string
	enter        string
	untilCleared bool
	// untilBossPhase, when positive, stops a fighting bot once its
	// dungeon's boss entered that phase.
	untilBossPhase int
	// usable are the item kinds a fighting bot uses when hurt (potions),
	// bolts the enemy abilities it casts.
	usable map[string]bool
	bolts  []protocol.AbilityDefinition
}

// arsenal is what a fighting bot uses of a pack: the kinds of item it
// uses when hurt, and the enemy abilities it casts.
func arsenal(pack protocol.PackDefinitions) (map[string]bool, []protocol.AbilityDefinition) {
	usable := map[string]bool{}
	for _, it := range pack.Items {
		if it.Use != nil {
			usable[it.Kind] = true
		}
	}
	var bolts []protocol.AbilityDefinition
	for _, a := range pack.Abilities {
		if a.Target == "enemy" {
			bolts = append(bolts, a)
		}
	}
	return usable, bolts
}

// roomArsenal is the arsenal of every pack of the room, from the join
// API's definitions; nothing when it cannot say.
func roomArsenal(ctx context.Context, j *joinflags.Flags, room string) (map[string]bool, []protocol.AbilityDefinition) {
	defs, err := (&client.ContentCache{API: j.API()}).Content(ctx, j.Namespace, room)
	if err != nil {
		return nil, nil
	}
	usable := map[string]bool{}
	var bolts []protocol.AbilityDefinition
	for _, pack := range defs.Packs {
		u, b := arsenal(pack)
		maps.Copy(usable, u)
		bolts = append(bolts, b...)
	}
	return usable, bolts
}

func runBot(ctx context.Context, endpoint, ticket string, opts client.Options, plan botPlan) botReport {
	inputRate := plan.inputRate
	c, err := playtest.DialPatiently(ctx, endpoint, ticket, opts)
	if err != nil {
		return botReport{err: err}
	}
	defer c.Close()
	if plan.enter != "" {
		ack, err := playtest.EnterPortal(ctx, c, plan.enter)
		if err != nil {
			return botReport{err: fmt.Errorf("entering %s: %w", plan.enter, err)}
		}
		if !ack.OK {
			return botReport{err: fmt.Errorf("entering %s: %s: %s", plan.enter, ack.Code, ack.Message)}
		}
	}
	move := time.NewTicker(time.Second / time.Duration(inputRate))
	defer move.Stop()
	ping := time.NewTicker(time.Second)
	defer ping.Stop()
	dx, dy := float32(1), float32(0)
	traveller := newTraveller(plan.portalRate)
	var fights *fighter
	if plan.behavior == behaviorFight {
		usable, bolts := plan.usable, plan.bolts
		if usable == nil { // no join API: the map's built-in pack
			pack := content.ForMap(c.Static().Config.Content, c.Static().Config.Biome)
			usable, bolts = arsenal(pack.Definitions())
		}
		fights = newFighter(c.Static(), usable, bolts)
	}
	for {
		select {
		case <-ctx.Done():
			s := c.Snapshot()
			r := botReport{rtts: s.RTTs, bytes: s.Bytes, snapshots: s.Snapshots, reconnects: s.Reconnects, portals: traveller.report}
			if fights != nil {
				r.fights = fights.report
			}
			return r
		case <-ping.C:
			_ = c.Ping()
			a := rand.Float64() * 2 * math.Pi // a new heading now and then
			dx, dy = float32(math.Cos(a)), float32(math.Sin(a))
		case <-move.C:
			if s := c.Snapshot(); s.Closed != nil {
				return botReport{err: s.Closed}
			}
			if fights != nil && (plan.untilCleared && fights.rooms.done() || plan.untilBossPhase > 0 && fights.report.bossPhase >= plan.untilBossPhase) {
				s := c.Snapshot()
				return botReport{rtts: s.RTTs, bytes: s.Bytes, snapshots: s.Snapshots, reconnects: s.Reconnects, portals: traveller.report, fights: fights.report}
			}
			steps := max(1, c.Welcome().TickRate/inputRate) // one input per server tick
			hx, hy, travelling := traveller.step(c)
			if travelling {
				dx, dy = hx, hy
			} else if fights != nil {
				if fx, fy, fighting := fights.step(c); fighting {
					dx, dy = fx, fy
				}
			}
			// A move fails while the client reconnects by itself; it has
			// failed for good only once the client says it closed.
			if _, err := c.MoveSteps(dx, dy, steps); err != nil && !travelling && c.Snapshot().Closed != nil {
				return botReport{err: err}
			}
		}
	}
}

func printBotReport(reports []botReport, d time.Duration) (failed int) {
	var rtts []time.Duration
	var rates []float64
	reconnects := 0
	for _, r := range reports {
		if r.err != nil {
			failed++
			fmt.Println("bot failed:", r.err)
			continue
		}
		reconnects += r.reconnects
		rtts = append(rtts, r.rtts...)
		rates = append(rates, float64(r.bytes)/d.Seconds())
	}
	slices.Sort(rtts)
	slices.Sort(rates)
	fmt.Printf("bots %d (failed %d, reconnects %d)  rtt p50 %s p95 %s p99 %s  downstream per bot p50 %.0f B/s max %.0f B/s\n",
		len(reports), failed, reconnects, playtest.Percentile(rtts, 0.50), playtest.Percentile(rtts, 0.95), playtest.Percentile(rtts, 0.99), pctf(rates, 0.5), pctf(rates, 1))
	var portals portalReport
	var fights fightReport
	for _, r := range reports {
		portals.add(r.portals)
		fights.add(r.fights)
	}
	if portals.tries > 0 {
		portals.print()
	}
	if fights.attacks > 0 {
		fights.print()
	}
	return failed
}

func pctf(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(math.Min(float64(len(sorted)-1), p*float64(len(sorted))))]
}
