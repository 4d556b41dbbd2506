package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// applySamples server-side applies every object in dir's YAML files, as
// `kubectl apply --server-side -n default -f dir` would.
func applySamples(ctx context.Context, cfg *rest.Config, dir string) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		if err := testenv.ApplyFileIn(ctx, c, file, "default"); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

// applyPolicy installs config/policy, as `make deploy` and the chart do:
// the room servers write only their own map's heartbeat.
func applyPolicy(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	return testenv.ApplyRoomServerStatusPolicy(ctx, c)
}

// pointSamplesAt replaces the sample database Secret's placeholder DSN with
// the dev Postgres, so the sample room persists for real.
func pointSamplesAt(ctx context.Context, cfg *rest.Config, dsn string) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "roomkeeper-db", "namespace": "default"},
		"stringData": map[string]any{"dsn": dsn},
	}}
	if err := c.Patch(ctx, secret, client.Apply, client.FieldOwner("roomkeeper-dev"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
		return fmt.Errorf("pointing the sample room at the dev database: %w", err)
	}
	return nil
}

// waitRoomReady waits until the sample GameRoom default/demo is Ready.
func waitRoomReady(ctx context.Context, cfg *rest.Config, limit time.Duration) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		room := &unstructured.Unstructured{}
		room.SetAPIVersion("game.roomkeeper.dev/v1")
		room.SetKind("GameRoom")
		if c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, room) == nil {
			if phase, _, _ := unstructured.NestedString(room.Object, "status", "phase"); phase == "Running" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("the sample room did not become Ready")
		case <-tick.C:
		}
	}
}
