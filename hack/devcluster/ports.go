package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// portUse is an address make dev is about to listen on, what listens
// there, and the devcluster flag that moves it.
type portUse struct {
	addr, what, flag string
}

// portUses lists what make dev will listen on. The pods' ports are
// checked at the first pod address: a pod binds its own 127.0.10.x
// address, which only a wildcard listener (0.0.0.0:7350) or a pod left
// over from an earlier run can already hold.
func portUses(addr addresses) []portUse {
	firstPod := addr.podPrefix + "2"
	uses := []portUse{
		{addr.joinAPI, "the join API", "--join-api"},
		{addr.metrics, "the manager's metrics", "--metrics"},
		{addr.probes, "the manager's health probes", "--probes"},
		{addr.admin, "the manager's admin API", "--admin-api"},
		{addr.gateway, "the development gateway", "--gateway"},
		{net.JoinHostPort(firstPod, strconv.Itoa(podenv.GamePort)), "room-server pods' game port", "--pod-prefix"},
		{net.JoinHostPort(firstPod, strconv.Itoa(podenv.HTTPPort)), "room-server pods' health port", "--pod-prefix"},
	}
	if port := os.Getenv("PGPORT"); port != "" {
		uses = append(uses, portUse{net.JoinHostPort("127.0.0.1", port), "Postgres (PGPORT)", "PGPORT"})
	}
	return uses
}

// checkPorts fails, before anything starts, when one of the addresses is
// taken, and names each busy one, what make dev wanted it for and which
// process holds it. "0" and "" mean the listener is off.
func checkPorts(uses []portUse) error {
	var busy []string
	for _, u := range uses {
		if u.addr == "" || u.addr == "0" {
			continue
		}
		l, err := net.Listen("tcp", u.addr)
		if err == nil {
			_ = l.Close()
			continue
		}
		busy = append(busy, fmt.Sprintf("%s (%s) is in use%s: stop it, or move %s with %s",
			u.addr, u.what, heldBy(u.addr), u.what, moveHint(u.flag)))
	}
	if len(busy) == 0 {
		return nil
	}
	return errors.New("a port make dev needs is taken:\n  " + strings.Join(busy, "\n  "))
}

func moveHint(flag string) string {
	if flag == "PGPORT" {
		return "PGPORT=<free port> (or unset it)"
	}
	return fmt.Sprintf("`make dev DEV_FLAGS=%s=...`", flag)
}

// heldBy names the processes listening on addr's port (on that address
// or on every address), as " by pid N (command line)", or "" when it
// cannot tell, e.g. for another user's process.
func heldBy(addr string) string {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return ""
	}
	inodes := listeningInodes(net.ParseIP(host), port)
	if len(inodes) == 0 {
		return ""
	}
	var holders []string
	for _, pid := range socketOwners(inodes) {
		holders = append(holders, fmt.Sprintf("pid %d (%s)", pid, commandLine(pid)))
	}
	if len(holders) == 0 {
		return ""
	}
	return " by " + strings.Join(holders, ", ")
}

// listeningInodes returns the socket inodes of the TCP listeners on ip
// and port, or on every address and port, from /proc/net/tcp and
// /proc/net/tcp6.
func listeningInodes(ip net.IP, port int) map[string]bool {
	const listen = "0A" // TCP_LISTEN in /proc/net/tcp's st column
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		lines := bufio.NewScanner(f)
		for lines.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(lines.Text())
			if len(fields) < 10 || fields[3] != listen {
				continue
			}
			if listensOn(fields[1], ip, port) {
				inodes[fields[9]] = true
			}
		}
		_ = f.Close()
	}
	return inodes
}

// listensOn reports whether a local_address of /proc/net/tcp ("0100007F:1F90":
// the address in the kernel's byte order, the port big-endian, both hex)
// covers ip and port: the same port on ip or on the wildcard address.
func listensOn(local string, ip net.IP, port int) bool {
	hexAddr, hexPort, ok := strings.Cut(local, ":")
	if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
		return false
	}
	if strings.Trim(hexAddr, "0") == "" {
		return true // 0.0.0.0 or ::
	}
	ip4 := ip.To4()
	if len(hexAddr) != 8 || ip4 == nil {
		return false
	}
	word, err := strconv.ParseUint(hexAddr, 16, 32)
	if err != nil {
		return false
	}
	var kernel [4]byte
	binary.LittleEndian.PutUint32(kernel[:], uint32(word))
	return net.IP(kernel[:]).Equal(ip4)
}

// socketOwners returns the pids with an open file descriptor on one of
// the socket inodes.
func socketOwners(inodes map[string]bool) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	var pids []int
	for _, fdDir := range procs {
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.Trim(link[len("socket:"):], "[]")] {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(fdDir)))
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// commandLine is pid's command line, shortened for an error message.
func commandLine(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(raw) == 0 {
		return "command unknown"
	}
	line := strings.Join(strings.Fields(strings.ReplaceAll(string(raw), "\x00", " ")), " ")
	const maxLen = 120
	if len(line) > maxLen {
		line = line[:maxLen] + "..."
	}
	return line
}
