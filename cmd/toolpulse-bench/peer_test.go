package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPeerSmoke(t *testing.T) {
	dir := t.TempDir()
	jsonPath, keepDir := filepath.Join(dir, "peer.json"), filepath.Join(dir, "keep")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"peer", "--gatus", self,
		"--probes", "5", "--interval", "500ms", "--warmup", "1s", "--duration", "3s",
		"--storage", "sqlite", "--json", jsonPath, "--keep", keepDir,
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	for _, want := range []string{"checks", "Gatus CPU", "start lag", "[BODY].results[0].id == doc_00001"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep peerReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", jsonPath, err)
	}
	// 5 endpoints every 500ms for 3s: 30 checks, less what the window's
	// edges cut.
	if c := rep.Checks; c.Expected != 30 || c.Completed < 25 || c.Completed > 35 {
		t.Errorf("checks = %+v, want about 30 of 30", c)
	}
	if rep.CPU.PeerSeconds <= 0 || rep.CPU.PeerMicrosPerOp <= 0 || rep.Memory.PeakRSSBytes <= 0 {
		t.Errorf("the stand-in's CPU or memory was not read: %+v %+v", rep.CPU, rep.Memory)
	}
	if rep.StartLag.Runs != rep.Checks.Completed {
		t.Errorf("start lag over %d runs, want the %d checks", rep.StartLag.Runs, rep.Checks.Completed)
	}
	if rep.KeptIn == "" {
		t.Error("kept_in is empty with --keep")
	}
	cfg, err := os.ReadFile(filepath.Join(keepDir, "gatus.yaml"))
	if err != nil {
		t.Fatalf("Gatus's config was not kept: %v", err)
	}
	if want := "  type: sqlite\n  path: " + strconv.Quote(filepath.Join(keepDir, "gatus.db")) + "\n"; !strings.Contains(string(cfg), want) {
		t.Errorf("Gatus's config does not have the store %q:\n%s", want, cfg)
	}
}

func TestPeerNeedsGatus(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"peer", "--probes", "5"}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d without --gatus, want %d\n%s", code, exitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--gatus is required") {
		t.Errorf("stderr does not say --gatus is required:\n%s", stderr.String())
	}
}

// standInGatus does what Gatus does with the config gatusConfig writes,
// as far as the peer mode relies on it: it answers /health on the web
// address and POSTs the body to every endpoint's url every interval,
// reading each answer whole. It returns the process's exit code.
func standInGatus(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var host, port string
	var urls []string
	var interval time.Duration
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "- ")), ": ")
		switch key {
		case "address":
			host = value
		case "port":
			port = value
		case "url":
			u, err := strconv.Unquote(value)
			if err != nil {
				fmt.Fprintf(os.Stderr, "url %s: %v\n", value, err)
				return 1
			}
			urls = append(urls, u)
		case "interval":
			if interval, err = time.ParseDuration(value); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	for _, u := range urls {
		go func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				resp, err := http.Post(u, "application/json", strings.NewReader(`{"query":"API migration guide"}`))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	})}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
