package main

import (
	"testing"
	"time"
)

// TestTuningFlags: the flags benchmarks and operators tune reach the
// room server's config, and a bad value is refused with the flag named.
func TestTuningFlags(t *testing.T) {
	env := envOf(map[string]string{"ROOMKEEPER_MAP_CONFIG": "{}"})
	o, err := parseFlags([]string{"--key-dir=/keys", "--cell-size=96", "--hysteresis=12", "--far-refresh-every=3",
		"--input-window=45", "--spawn-points=16", "--hello-timeout=4s", "--resume-grace=1m", "--guest-resume-grace=5s",
		"--max-unseated=100", "--max-unseated-per-address=7"}, env)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.CellSize != 96 || c.Hysteresis != 12 || c.FarRefreshEvery != 3 || c.Sim.InputWindow != 45 || c.SpawnPoints != 16 ||
		c.HelloTimeout != 4*time.Second || c.ResumeGrace != time.Minute || c.GuestResumeGrace != 5*time.Second ||
		c.MaxUnseated != 100 || c.MaxUnseatedPerAddress != 7 {
		t.Fatalf("config %+v does not carry the flags", c)
	}
	for _, bad := range []string{"--cell-size=wide", "--input-window=-1", "--spawn-points=x"} {
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
