package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestTheCadenceRenewsTheLeaseBetweenStatusHeartbeats walks the beats of
// one pod and names each: S a status heartbeat, L a Lease renewal.
func TestTheCadenceRenewsTheLeaseBetweenStatusHeartbeats(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "p")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "p", errors.New("no"))
	timeout := errors.New("context deadline exceeded")
	two := Report{Players: 2, ActivePlayers: 2}
	cases := []struct {
		name    string
		reports []Report // one a beat; missing ones repeat the last
		lease   []error  // each renewal's answer; missing ones succeed
		answers []Handover
		want    string
	}{
		{name: "steady: a status heartbeat every third beat", reports: []Report{two}, want: "SLLSLLSLL"},
		{name: "players change, the seats unknown: a status heartbeat at once", reports: []Report{two, two, {Players: 3, ActivePlayers: 3}},
			want: "SLSLLSLLS"},
		{name: "an idle player, the seats unknown: a status heartbeat at once", reports: []Report{two, two, two, two, {Players: 2, ActivePlayers: 1}},
			want: "SLLSSLLSL"},
		{name: "a player more on a half-empty map: at the next regular one", reports: []Report{
			{Seats: 50, Players: 2, ActivePlayers: 2}, {Seats: 50, Players: 2, ActivePlayers: 2}, {Seats: 50, Players: 3, ActivePlayers: 3}},
			want: "SLLSLLSLL"},
		{name: "an idle player on a half-empty map: at the next regular one", reports: []Report{
			{Seats: 50, Players: 2, ActivePlayers: 2}, {Seats: 50, Players: 2, ActivePlayers: 1}},
			want: "SLLSLLSLL"},
		{name: "a player into a map just emptied: at the next regular one", reports: []Report{{Seats: 50}, {Seats: 50}, {Seats: 50, Players: 1, ActivePlayers: 1}},
			want: "SLLSLLSLL"},
		{name: "a player into a map held empty for a timeout: at once", reports: []Report{{Seats: 50}, {Seats: 50}, {Seats: 50}, {Seats: 50}, {Seats: 50, Players: 1, ActivePlayers: 1}},
			want: "SLLSSLLSL"},
		{name: "a player playing again on a map held idle for a timeout: at once", reports: []Report{
			{Seats: 50, Players: 1}, {Seats: 50, Players: 1}, {Seats: 50, Players: 1}, {Seats: 50, Players: 1}, {Seats: 50, Players: 1, ActivePlayers: 1}},
			want: "SLLSSLLSL"},
		{name: "the last player gone: at the next regular one", reports: []Report{{Seats: 50, Players: 1, ActivePlayers: 1}, {Seats: 50}},
			want: "SLLSLLSLL"},
		{name: "nearly full (10 seats free of 50): at once", reports: []Report{
			{Seats: 50, Players: 39, ActivePlayers: 39}, {Seats: 50, Players: 39, ActivePlayers: 39}, {Seats: 50, Players: 40, ActivePlayers: 40}},
			want: "SLSLLSLLS"},
		{name: "leaving nearly full: at once", reports: []Report{
			{Seats: 50, Players: 40, ActivePlayers: 40}, {Seats: 50, Players: 40, ActivePlayers: 40}, {Seats: 50, Players: 39, ActivePlayers: 39}},
			want: "SLSLLSLLS"},
		{name: "the database away, then back", reports: []Report{two, {Players: 2, ActivePlayers: 2, WaitingFor: "database"}, two},
			want: "SSSLLSLLS"},
		{name: "the world's checkpoints failing, then written", reports: []Report{two, two,
			{Players: 2, ActivePlayers: 2, World: &World{Revision: 1, Error: "disk full"}}, {Players: 2, ActivePlayers: 2, World: &World{Revision: 1, Error: "disk full"}},
			{Players: 2, ActivePlayers: 2, World: &World{Revision: 2}}},
			want: "SLSLSLLSL"},
		{name: "the world restored", reports: []Report{two, two, {Players: 2, ActivePlayers: 2, World: &World{Revision: 1}}},
			want: "SLSLLSLLS"},
		{name: "no Lease: status heartbeats for a minute, then a try", reports: []Report{two}, lease: []error{notFound},
			want: "SSSSSSSSSSSSSLLSL"},
		{name: "renewals refused: the same", reports: []Report{two}, lease: []error{forbidden},
			want: "SSSSSSSSSSSSSLLSL"},
		{name: "a renewal that timed out: a status heartbeat instead, once", reports: []Report{two}, lease: []error{nil, timeout},
			want: "SLSLLSLLS"},
		{name: "a successor waiting for its handover: every beat", reports: []Report{two},
			answers: []Handover{{Successor: true}, {Successor: true}, {Successor: true}, {}}, want: "SSSSLLSLL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCadence(DefaultInterval)
			var got strings.Builder
			now, renewal, answer := time.Unix(1e9, 0), 0, 0
			for beat := range len(tc.want) {
				rep := tc.reports[min(beat, len(tc.reports)-1)]
				if !c.statusDue(rep, now) {
					var err error
					if renewal < len(tc.lease) {
						err = tc.lease[renewal]
					}
					renewal++
					if c.renewed(err, now) {
						got.WriteString("L")
						now = now.Add(DefaultInterval)
						continue
					}
				}
				var h Handover
				if answer < len(tc.answers) {
					h = tc.answers[answer]
				}
				answer++
				c.sent(rep, h, now)
				got.WriteString("S")
				now = now.Add(DefaultInterval)
			}
			if got.String() != tc.want {
				t.Errorf("beats %s, want %s", got.String(), tc.want)
			}
		})
	}
}
