package main

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestABusyPortIsNamedWithItsHolder: make dev refuses to start when an
// address it needs is taken, and says which one, what for, which process
// holds it and which flag moves it; free and disabled addresses pass.
func TestABusyPortIsNamedWithItsHolder(t *testing.T) {
	busy := listen(t, "127.0.0.1:0").Addr().String()
	free := testenv.MustFreeAddress(t)

	err := checkPorts([]portUse{
		{free, "the join API", "--join-api"},
		{"0", "the manager's health probes", "--probes"},
		{busy, "the manager's metrics", "--metrics"},
	})
	if err == nil {
		t.Fatalf("checkPorts passed with %s taken", busy)
	}
	msg := err.Error()
	for _, want := range []string{busy, "the manager's metrics", fmt.Sprintf("pid %d", os.Getpid()), "DEV_FLAGS=--metrics="} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, free) || strings.Contains(msg, "health probes") {
		t.Errorf("error %q names an address that is free or off", msg)
	}
	if err := checkPorts([]portUse{{free, "the join API", "--join-api"}}); err != nil {
		t.Errorf("checkPorts with a free address: %v", err)
	}
}

// TestAWildcardListenerBlocksThePodPorts: a pod binds its own 127.0.10.x
// address, so a listener on every address at a pod port is in the way
// and is reported with its holder, and one on 127.0.0.1 (the README's
// standalone room server) is not.
func TestAWildcardListenerBlocksThePodPorts(t *testing.T) {
	wildcard := listen(t, "0.0.0.0:0")
	_, port, _ := net.SplitHostPort(wildcard.Addr().String())
	onLoopback := listen(t, "127.0.0.1:0")
	_, loopbackPort, _ := net.SplitHostPort(onLoopback.Addr().String())

	err := checkPorts([]portUse{{"127.0.10.2:" + port, "room-server pods' game port", "--pod-prefix"}})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("a wildcard listener on the pod port: err = %v, want it named with this process", err)
	}
	if err := checkPorts([]portUse{{"127.0.10.2:" + loopbackPort, "room-server pods' game port", "--pod-prefix"}}); err != nil {
		t.Errorf("a listener on 127.0.0.1 only blocked a pod address: %v", err)
	}
}

// TestTheDefaultsLeaveTheREADMEExamplesAlone: the README's standalone
// room server keeps running beside make dev; make dev's own listeners
// must not need its addresses.
func TestTheDefaultsLeaveTheREADMEExamplesAlone(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile(`--(?:http-)?listen=(\S+)`).FindAllStringSubmatch(string(readme), -1)
	if len(examples) == 0 {
		t.Fatal("the README has no --listen example: this test looks for the wrong thing")
	}
	for _, u := range portUses(defaultAddresses) {
		for _, ex := range examples {
			if ex[1] == u.addr {
				t.Errorf("make dev's %s (%s) is the address of the README example %q", u.what, u.addr, ex[0])
			}
		}
	}
}
