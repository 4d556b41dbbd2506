package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// TestTuningFlags: the flags benchmarks and operators tune reach the
// room server's config, and a bad value is refused with the flag named.
func TestTuningFlags(t *testing.T) {
	env := envOf(map[string]string{"ROOMKEEPER_MAP_CONFIG": "{}"})
	o, err := parseFlags([]string{"--key-dir=/keys", "--cell-size=96", "--hysteresis=12", "--far-refresh-every=3",
		"--input-window=45", "--spawn-points=16", "--hello-timeout=4s", "--resume-grace=1m", "--guest-resume-grace=5s",
		"--max-unseated=100", "--max-unseated-per-address=7", "--heartbeat-interval=20s", "--timer-slack=3ms"}, env)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.CellSize != 96 || c.Hysteresis != 12 || c.FarRefreshEvery != 3 || c.Sim.InputWindow != 45 || c.SpawnPoints != 16 ||
		c.HelloTimeout != 4*time.Second || c.ResumeGrace != time.Minute || c.GuestResumeGrace != 5*time.Second ||
		c.MaxUnseated != 100 || c.MaxUnseatedPerAddress != 7 || o.heartbeatInterval != 20*time.Second || o.timerSlack != 3*time.Millisecond {
		t.Fatalf("config %+v does not carry the flags", c)
	}
	for _, bad := range []string{"--cell-size=wide", "--input-window=-1", "--spawn-points=x", "--heartbeat-interval=500ms", "--timer-slack=-1ms"} {
		if _, err := parseFlags([]string{"--key-dir=/keys", bad}, env); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestTheDSNLosesTheNewlineOfTheFileItCameFrom: a database Secret made
// with --from-file has the file's trailing newline; the server reads the
// DSN without it.
func TestTheDSNLosesTheNewlineOfTheFileItCameFrom(t *testing.T) {
	dsn := "postgres://postgres@10.200.0.1:5432/postgres?sslmode=disable"
	o, err := parseFlags([]string{"--key-dir=/keys"}, envOf(map[string]string{"ROOMKEEPER_MAP_CONFIG": "{}",
		"ROOMKEEPER_DATABASE_URL": dsn + "\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.databaseURL != dsn {
		t.Errorf("the DSN is %q, want %q", o.databaseURL, dsn)
	}
}

// TestTheContentFileIsThePack: --content-file (a GameContent's revision,
// mounted by the operator) is the pack the map runs; a file that is no
// valid pack stops the server before it serves, naming the flag.
func TestTheContentFileIsThePack(t *testing.T) {
	pack, _ := content.Named("crypt")
	pack.Name = "haunted"
	pack.Enemies[0].Name = "wight"
	encoded, err := pack.Encode()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "pack.json")
	if err := os.WriteFile(good, encoded, 0o600); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"ROOMKEEPER_MAP_CONFIG": `{"content":"haunted"}`})
	o, err := parseFlags([]string{"--key-dir=/keys", "--content-file=" + good}, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Sim.Content.Name != "haunted" || o.cfg.Sim.Content.Enemies[0].Name != "wight" {
		t.Errorf("the server runs %+v, not the file's pack", o.cfg.Sim.Content)
	}

	pack.Enemies[0].Drops[0].Kind = "ectoplasm"
	broken, _ := pack.Encode()
	bad := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(bad, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.json")} {
		_, err := parseFlags([]string{"--key-dir=/keys", "--content-file=" + path}, env)
		if err == nil || !strings.Contains(err.Error(), "--content-file") {
			t.Errorf("%s: %v, want a refusal naming --content-file", path, err)
		}
	}
}
