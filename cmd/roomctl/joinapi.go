package main

import (
	"errors"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
)

// useDefaultJoinAPI picks the default join API when nothing says where
// tickets come from, so `roomctl join --room demo` works against `make dev`.
func useDefaultJoinAPI(j *joinflags.Flags, t *ticketFlags, endpoint string) {
	if j.URL == "" && endpoint == "" && (t == nil || (t.ticket == "" && t.keyDir == "")) {
		j.URL = joinflags.Default()
	}
}

// checkExclusive refuses a mix of the join API and local tickets, which
// would leave unclear where the ticket comes from.
func checkExclusive(t *ticketFlags, endpoint string) error {
	switch {
	case endpoint != "" || t.ticket != "" || t.keyDir != "":
		return errors.New("--join-api gives the endpoint and ticket: drop --endpoint, --ticket and --key-dir")
	case t.room == "":
		return errors.New("--join-api needs --room")
	}
	return nil
}
