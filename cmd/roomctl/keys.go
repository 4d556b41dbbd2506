package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/token"
)

// runKeygen writes a fresh key set in the layout of a mounted key Secret.
func runKeygen(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to write current.kid and current.key into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	key, err := token.NewKey()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	if err := (token.KeySet{Current: key}).WriteDir(*dir); err != nil {
		return err
	}
	fmt.Printf("wrote key %s to %s\n", key.ID, *dir)
	return nil
}

// runMint prints a join ticket signed with a local key directory.
func runMint(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("mint", flag.ContinueOnError)
	var t ticketFlags
	t.register(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "ticket lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ticket, err := t.mint(*ttl)
	if err != nil {
		return err
	}
	fmt.Println(ticket)
	return nil
}

// mint signs a join ticket from the flags.
func (t *ticketFlags) mint(ttl time.Duration) (string, error) {
	if t.keyDir == "" || t.room == "" || t.instance == "" {
		return "", errors.New("minting needs --key-dir, --room and --instance")
	}
	keys, err := token.LoadDir(t.keyDir)
	if err != nil {
		return "", err
	}
	character := t.character
	if character == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		character = "dev-" + hex.EncodeToString(b)
	}
	raw, _, err := token.NewSigner(keys, time.Now).Sign(token.Claims{Type: token.TypeJoin, Subject: t.user,
		Character: character, Room: t.room, Map: t.instance}, ttl)
	return raw, err
}

// get returns the given ticket or mints one.
func (t *ticketFlags) get() (string, error) {
	if t.ticket != "" {
		return t.ticket, nil
	}
	return t.mint(10 * time.Second)
}
