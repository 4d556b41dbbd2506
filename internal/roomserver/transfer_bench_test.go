package roomserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// bouncer is a player standing on a portal: each map's arrival is the
// portal back, so it can go through again at once, town -> crypt -> town.
type bouncer struct {
	c    *client.Client
	took []time.Duration
}

// newBouncer joins the town as character id and walks it onto the portal.
func newBouncer(b *testing.B, w *world, id string) *bouncer {
	b.Helper()
	c := w.town.join(character(id))
	portal, _ := playtest.PortalTo(c, "crypt")
	if err := playtest.WalkTo(context.Background(), c, protocol.EntityState{X: portal.X, Y: portal.Y}); err != nil {
		b.Fatal(err)
	}
	return &bouncer{c: c}
}

// hop sends portal.enter and waits until the client plays on the far side:
// portal to welcome, as a player sees it.
func (p *bouncer) hop(ctx context.Context) error {
	to := "crypt"
	if p.c.Snapshot().Map == "crypt" {
		to = "town"
	}
	portal, ok := playtest.PortalTo(p.c, to)
	if !ok {
		return fmt.Errorf("no portal to %s", to)
	}
	before := p.c.Snapshot().Transfers
	start := time.Now()
	ack, err := p.c.Do(ctx, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity})
	if err != nil || !ack.OK {
		return fmt.Errorf("portal.enter: %+v %w (errors %+v)", ack, err, p.c.Snapshot().Errors)
	}
	if _, err := p.c.WaitFor(ctx, func(s client.State) bool { return s.Transfers > before }); err != nil {
		return err
	}
	p.took = append(p.took, time.Since(start))
	return nil
}

// BenchmarkTransfer is docs/design.md section 8's portal transfer end to end on
// loopback: two maps on one Postgres, one player going back and forth.
// Each transfer commits the checkpoint and the lease's hand-over, issues
// the token, reconnects and is welcomed. Reported: p50 and p99 from
// portal.enter to playing on the far side.
func BenchmarkTransfer(b *testing.B) {
	w := newWorld(b, nil)
	p := newBouncer(b, w, "bench-bouncer")
	ctx := context.Background()
	for b.Loop() {
		if err := p.hop(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportLatency(b, p.took)
}

// BenchmarkTransferThroughput is many players of one pod pair going back
// and forth at once. Reported: transfers per second, and the latencies.
func BenchmarkTransferThroughput(b *testing.B) {
	w := newWorld(b, func(c *Config) { c.MaxPlayers = 1000 })
	const players = 32
	bouncers := make([]*bouncer, players)
	var walking sync.WaitGroup
	for i := range bouncers {
		c := w.town.join(character(fmt.Sprint("bench-", i)))
		bouncers[i] = &bouncer{c: c}
		walking.Go(func() {
			portal, _ := playtest.PortalTo(c, "crypt")
			if err := playtest.WalkTo(context.Background(), c, protocol.EntityState{X: portal.X, Y: portal.Y}); err != nil {
				b.Error(err)
			}
		})
	}
	walking.Wait()
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, players)
	for _, p := range bouncers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := p.hop(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "transfers/s")
	var all []time.Duration
	for _, p := range bouncers {
		all = append(all, p.took...)
	}
	reportLatency(b, all)
}

func reportLatency(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	ms := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
