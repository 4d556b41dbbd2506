// Command fakeserver stands in for a room-server image in the localnode
// tests. It serves /readyz on --http-listen, echoes TCP on --listen, writes
// a JSON report (pid, args, env, the files in --key-dir) to the file named by
// FAKESERVER_REPORT, exits with EXIT_CODE after EXIT_AFTER when both are set,
// and exits 0 on SIGTERM unless IGNORE_SIGTERM=1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type report struct {
	PID  int               `json:"pid"`
	Args []string          `json:"args"`
	Env  []string          `json:"env"`
	Keys map[string]string `json:"keys"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeserver:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "", "game address")
	httpListen := flag.String("http-listen", "", "HTTP address")
	keyDir := flag.String("key-dir", "", "directory of key files")
	flag.Parse()

	signals := make(chan os.Signal, 1)
	if os.Getenv("IGNORE_SIGTERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(signals, syscall.SIGTERM)
	}
	if err := serve(*listen, *httpListen); err != nil {
		return err
	}
	if err := writeReport(os.Getenv("FAKESERVER_REPORT"), *keyDir); err != nil {
		return err
	}
	exitAfter(os.Getenv("EXIT_AFTER"), os.Getenv("EXIT_CODE"))
	<-signals
	fmt.Println("SIGTERM, exiting")
	return nil
}

func serve(listen, httpListen string) error {
	if listen != "" {
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return err
		}
		go echo(l)
	}
	if httpListen == "" {
		return nil
	}
	l, err := net.Listen("tcp", httpListen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	return nil
}

// echo sends back what each connection to l sends, until the client closes.
func echo(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			_, _ = io.Copy(conn, conn)
		}()
	}
}

func writeReport(path, keyDir string) error {
	if path == "" {
		return nil
	}
	r := report{PID: os.Getpid(), Args: os.Args[1:], Env: os.Environ(), Keys: map[string]string{}}
	if keyDir != "" {
		entries, err := os.ReadDir(keyDir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(keyDir, e.Name()))
			if err != nil {
				return err
			}
			r.Keys[e.Name()] = string(data)
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func exitAfter(after, code string) {
	d, err := time.ParseDuration(after)
	if err != nil {
		return
	}
	n, _ := strconv.Atoi(code)
	time.AfterFunc(d, func() { os.Exit(n) })
}
