package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Bounds of one portal trip: a bot that cannot reach its portal (walls in
// the way) or whose transfer does not end gives up and counts a failure.
const (
	portalWalkLimit     = 30 * time.Second
	portalTransferLimit = 60 * time.Second
)

// portalReport counts a bot's portal trips.
type portalReport struct {
	tries, transfers, returns, refused, unreached int
	// latencies run from sending portal.enter to playing on the far side.
	latencies []time.Duration
}

func (r *portalReport) add(o portalReport) {
	r.tries += o.tries
	r.transfers += o.transfers
	r.returns += o.returns
	r.refused += o.refused
	r.unreached += o.unreached
	r.latencies = append(r.latencies, o.latencies...)
}

func (r portalReport) print() {
	slices.Sort(r.latencies)
	fmt.Printf("portals: tries %d  transferred %d  returned %d  refused %d  unreached %d  portal->welcome p50 %s p99 %s max %s\n",
		r.tries, r.transfers, r.returns, r.refused, r.unreached,
		playtest.Percentile(r.latencies, 0.50), playtest.Percentile(r.latencies, 0.99), playtest.Percentile(r.latencies, 1))
}

// traveller steers a bot to a portal now and then and walks it through.
type traveller struct {
	meanGap time.Duration // 0: never travel
	next    time.Time     // when the next trip starts
	target  *protocol.PortalView
	started time.Time
	// outcome delivers the end of a trip once portal.enter is sent.
	outcome chan tripOutcome
	report  portalReport
}

// tripOutcome is how one portal.enter ended and how long it took.
type tripOutcome struct {
	returned, refused bool
	took              time.Duration
}

func newTraveller(perMinute float64) *traveller {
	t := &traveller{}
	if perMinute > 0 {
		t.meanGap = time.Duration(float64(time.Minute) / perMinute)
		t.next = time.Now().Add(t.gap())
	}
	return t
}

// gap is the wait before the next trip: exponential, so trips of many bots
// do not come in waves.
func (t *traveller) gap() time.Duration {
	return time.Duration(rand.ExpFloat64() * float64(t.meanGap))
}

// step advances the trip and returns the heading to walk, if travelling.
func (t *traveller) step(c *client.Client) (float32, float32, bool) {
	now := time.Now()
	switch {
	case t.meanGap == 0:
		return 0, 0, false
	case t.outcome != nil:
		t.collect(now)
		return 0, 0, true
	case t.target == nil && now.After(t.next):
		t.begin(c, now)
	}
	if t.target == nil {
		return 0, 0, false
	}
	self := c.Snapshot().Self
	dx, dy := t.target.X-self.X, t.target.Y-self.Y
	d := float32(math.Hypot(float64(dx), float64(dy)))
	switch {
	case d < t.target.Radius/2:
		t.enter(c)
		return 0, 0, true
	case now.Sub(t.started) > portalWalkLimit:
		t.report.unreached++
		t.finish(now)
		return 0, 0, false
	}
	return dx / d, dy / d, true
}

// begin picks the nearest portal of the map the bot is on.
func (t *traveller) begin(c *client.Client, now time.Time) {
	self := c.Snapshot().Self
	portals := c.Welcome().Portals
	if len(portals) == 0 {
		t.next = now.Add(t.gap())
		return
	}
	best := slices.MinFunc(portals, func(a, b protocol.PortalView) int {
		return cmp.Compare(math.Hypot(float64(a.X-self.X), float64(a.Y-self.Y)), math.Hypot(float64(b.X-self.X), float64(b.Y-self.Y)))
	})
	t.target, t.started = &best, now
	t.report.tries++
}

// enter sends portal.enter and watches, on a goroutine of its own so the
// time is exact, for the client to play on the far side (or back), or for
// the refusal.
func (t *traveller) enter(c *client.Client) {
	s := c.Snapshot()
	before, returns := s.Transfers+s.Returns, s.Returns
	start := time.Now()
	seq, err := c.Command(protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: t.target.Entity})
	t.outcome = make(chan tripOutcome, 1)
	if err != nil {
		t.outcome <- tripOutcome{refused: true}
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), portalTransferLimit)
		defer cancel()
		var out tripOutcome
		s, err := c.WaitFor(ctx, func(s client.State) bool {
			return s.Transfers+s.Returns > before || refused(s, seq)
		})
		out.took = time.Since(start)
		out.refused = err != nil || refused(s, seq)
		out.returned = s.Returns > returns
		t.outcome <- out
	}()
}

// collect records the trip's outcome once it is known.
func (t *traveller) collect(now time.Time) {
	select {
	case out := <-t.outcome:
		switch {
		case out.refused:
			t.report.refused++
		case out.returned:
			t.report.returns++
		default:
			t.report.transfers++
			t.report.latencies = append(t.report.latencies, out.took)
		}
		t.outcome = nil
		t.finish(now)
	default:
	}
}

func refused(s client.State, seq uint32) bool {
	for _, a := range s.Acks {
		if a.Seq == seq && !a.OK {
			return true
		}
	}
	return false
}

func (t *traveller) finish(now time.Time) {
	t.target = nil
	t.next = now.Add(t.gap())
}
