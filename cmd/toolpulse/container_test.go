package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestContainerImage builds the image as a user would, with
// examples/container/build.sh, and runs it with podman: the binary runs
// on scratch (a dynamically linked one could not), and the daemon, given
// a config and a volume, probes a provider, serves /healthz, records its
// runs where the volume keeps them and stops cleanly on SIGTERM. The
// container shares the host's network so that its traffic stays on
// loopback.
func TestContainerImage(t *testing.T) {
	podman := tool(t, "podman", "podman")
	image := "localhost/toolpulse-test:" + randomTag()
	build := exec.Command("bash", filepath.Join("..", "..", "examples", "container", "build.sh"), image)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", image).Run() })

	if out := runTool(t, "", podman, "run", "--rm", "--network=none", image, "version"); !strings.HasPrefix(out, "toolpulse ") {
		t.Errorf("toolpulse version in the image printed %q", out)
	}

	prov := e2e.Serve(t, provider.New().Handler())
	config, data := t.TempDir(), t.TempDir()
	if err := os.Chmod(data, 0o777); err != nil { // the image runs as an unprivileged user
		t.Fatal(err)
	}
	addr := e2e.FreeAddr(t)
	cfg := harness.Fast(prov, "", "search")
	cfg.Storage.Path = "/var/lib/toolpulse/results.db"
	cfg.Server.Listen = addr
	if err := os.WriteFile(filepath.Join(config, "checks.yaml"), []byte(cfg.YAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "toolpulse-test-" + randomTag()
	runTool(t, "", podman, "run", "--detach", "--name", name, "--network=host",
		"--volume", config+":/etc/toolpulse:ro", "--volume", data+":/var/lib/toolpulse", image)
	t.Cleanup(func() { _ = exec.Command(podman, "rm", "--force", name).Run() })

	db := filepath.Join(data, "results.db")
	deadline := time.Now().Add(60 * time.Second)
	for !healthy("http://"+addr+"/healthz") || countRows(t, db, "SELECT count(*) FROM results WHERE outcome = 'pass'") < 3 {
		if time.Now().After(deadline) {
			logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
			t.Fatalf("the container did not serve /healthz and record 3 passing runs within 60 s; its log:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	runTool(t, "", podman, "stop", "--time", "20", name)
	if code := strings.TrimSpace(runTool(t, "", podman, "inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
		logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
		t.Errorf("the daemon exited with %s on SIGTERM, want 0; its log:\n%s", code, logs)
	}
}

func healthy(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func randomTag() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
