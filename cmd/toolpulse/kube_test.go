package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// kubeExample is the Kubernetes example, relative to this package.
var kubeExample = filepath.Join("..", "..", "examples", "kubernetes", "toolpulse.yaml")

// kubeDocs splits the example into its documents by kind.
func kubeDocs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(kubeExample)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		kind := ""
		for _, line := range strings.Split(doc, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kind = k
			}
		}
		if kind == "" {
			t.Fatalf("a document of %s has no kind:\n%s", kubeExample, doc)
		}
		if _, dup := docs[kind]; dup {
			t.Fatalf("%s has two %s documents", kubeExample, kind)
		}
		docs[kind] = doc + "\n"
	}
	for _, kind := range []string{"Secret", "ConfigMap", "Deployment", "Service"} {
		if docs[kind] == "" {
			t.Fatalf("%s has no %s", kubeExample, kind)
		}
	}
	return docs
}

// blockScalar returns the literal block that follows the line "key: |" in
// doc, its indentation removed.
func blockScalar(t *testing.T, doc, key string) string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != key+": |" {
			continue
		}
		outer := len(l) - len(strings.TrimLeft(l, " "))
		var b strings.Builder
		indent := -1
		for _, body := range lines[i+1:] {
			n := len(body) - len(strings.TrimLeft(body, " "))
			if strings.TrimSpace(body) != "" && n <= outer {
				break
			}
			if indent < 0 && strings.TrimSpace(body) != "" {
				indent = n
			}
			if len(body) >= indent && indent >= 0 {
				body = body[indent:]
			}
			b.WriteString(body + "\n")
		}
		return b.String()
	}
	t.Fatalf("no %q block scalar in\n%s", key+": |", doc)
	return ""
}

// stringData returns the Secret's stringData entries.
func stringData(t *testing.T, doc string) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := false
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case l == "stringData:":
			in = true
		case in && strings.HasPrefix(l, "  ") && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			k, v, _ := strings.Cut(strings.TrimSpace(l), ": ")
			out[k] = v
		case in && !strings.HasPrefix(l, "  "):
			in = false
		}
	}
	return out
}

// TestKubernetesExampleManifest checks the example without a cluster: its
// config loads as toolpulse loads it, on Postgres and with the fleet
// section, from the variables the Deployment sets (the DSN and token from
// the Secret, the node from the pod's name); its Deployment runs two
// replicas whose readiness is /healthz on the port the config listens on.
func TestKubernetesExampleManifest(t *testing.T) {
	docs := kubeDocs(t)
	secret := stringData(t, docs["Secret"])
	for _, key := range []string{"dsn", "token"} {
		if secret[key] == "" {
			t.Errorf("the Secret has no stringData %s", key)
		}
	}
	dep := docs["Deployment"]
	for _, want := range []string{
		"replicas: 2",
		"secretKeyRef:\n                  name: toolpulse-db\n                  key: dsn",
		"secretKeyRef:\n                  name: toolpulse-db\n                  key: token",
		"fieldPath: metadata.name",
		"readinessProbe:\n            httpGet:\n              path: /healthz\n              port: 9322",
		"configMap:\n            name: toolpulse-config",
		"mountPath: /etc/toolpulse",
	} {
		if !strings.Contains(dep, want) {
			t.Errorf("the Deployment lacks %q", want)
		}
	}
	env := map[string]string{
		"TOOLPULSE_PG_DSN": strings.Trim(secret["dsn"], `"`),
		"TOOLPULSE_TOKEN":  strings.Trim(secret["token"], `"`),
		"TOOLPULSE_NODE":   "toolpulse-5d8f7c9b6-x2k4q",
		"SEARCH_API_URL":   "http://search.default.svc.cluster.local:8080/search",
	}
	cfg, err := checks.Parse("checks.yaml", []byte(blockScalar(t, docs["ConfigMap"], "checks.yaml")), t.TempDir(),
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the ConfigMap's checks.yaml does not load:\n%v", err)
	}
	if cfg.Storage.Driver != checks.DriverPostgres || cfg.Storage.DSN.Reveal() != env["TOOLPULSE_PG_DSN"] {
		t.Errorf("storage is %s %q, want postgres from TOOLPULSE_PG_DSN", cfg.Storage.Driver, cfg.Storage.DSN.Reveal())
	}
	if cfg.Fleet.Node != env["TOOLPULSE_NODE"] {
		t.Errorf("fleet.node is %q, want the pod's name", cfg.Fleet.Node)
	}
	if cfg.Server.Listen != "0.0.0.0:9322" {
		t.Errorf("server.listen is %q, want 0.0.0.0:9322 (the readiness probe's port)", cfg.Server.Listen)
	}
}

// TestKubernetesExample plays the example with `podman kube play`, as
// CI's machines can, against a real Postgres: it builds the image with
// examples/container/build.sh, starts the Deployment's two replicas,
// waits until both are ready (/healthz answers 200) and exactly one says
// it leads (neither leading alone, as an instance without a fleet does),
// and checks that the leader recorded runs under its pod's name; then
// `podman kube down`, and nothing of the test is left in podman.
//
// Podman runs the pods on the host's network, so that every connection
// (to Postgres, the provider, /healthz) stays on loopback. On one network
// two replicas cannot share a port, so each is played on its own, from
// the example edited for it: one replica, its own port and names, the
// test's image, provider and database. Podman 4.3 (Debian's) reads a
// secretKeyRef from a podman secret holding a JSON map of base64 values
// and cannot read one its `kube play` made of a Secret document, so the
// test creates the secret itself from the example's Secret.
func TestKubernetesExample(t *testing.T) {
	podman := tool(t, "podman", "podman")
	docs := kubeDocs(t)
	dsn := pgtest.Database(t)
	prov := e2e.Serve(t, provider.New().Handler())
	tag := randomTag()

	image := "localhost/toolpulse-kube-test:" + tag
	build := exec.Command("bash", filepath.Join("..", "..", "examples", "container", "build.sh"), image)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", image).Run() })

	secretName := "toolpulse-db-" + tag
	secret := map[string]string{}
	for k := range stringData(t, docs["Secret"]) {
		secret[k] = base64.StdEncoding.EncodeToString([]byte(map[string]string{
			"dsn": dsn, "token": "kube-test-token-" + tag,
		}[k]))
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret.json")
	data, _ := json.Marshal(secret)
	if err := os.WriteFile(secretFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, dir, podman, "secret", "create", secretName, secretFile)
	t.Cleanup(func() { _ = exec.Command(podman, "secret", "rm", secretName).Run() })

	type replica struct {
		name, manifest, addr string
	}
	var replicas []replica
	for _, r := range []string{"a", "b"} {
		name := fmt.Sprintf("toolpulse-%s-%s", tag, r)
		addr := e2e.FreeAddr(t)
		_, port, _ := strings.Cut(addr, ":")
		text := docs["ConfigMap"] + "---\n" + docs["Deployment"]
		for _, edit := range [][2]string{
			{"metadata:\n  name: toolpulse-config\n", "metadata:\n  name: " + name + "-config\n"},
			{"configMap:\n            name: toolpulse-config\n", "configMap:\n            name: " + name + "-config\n"},
			{"metadata:\n  name: toolpulse\n", "metadata:\n  name: " + name + "\n"},
			{"name: toolpulse-db\n", "name: " + secretName + "\n"},
			{"replicas: 2\n", "replicas: 1\n"},
			{"listen: 0.0.0.0:9322\n", "listen: " + addr + "\n"},
			// On the host's network a port is not mapped: podman refuses
			// the mapping a containerPort asks for.
			{"          ports:\n            - name: http\n              containerPort: 9322\n", ""},
			{"port: 9322\n", "port: " + port + "\n"},
			{"image: localhost/toolpulse:dev\n", "image: " + image + "\n"},
			{"value: http://search.default.svc.cluster.local:8080/search\n", "value: " + prov + "/search\n"},
			{"interval: 30s\n", "interval: 1s\n"},
		} {
			if !strings.Contains(text, edit[0]) {
				t.Fatalf("the example no longer has %q, which the test edits", edit[0])
			}
			text = strings.ReplaceAll(text, edit[0], edit[1])
		}
		manifest := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, replica{name: name, manifest: manifest, addr: addr})
	}

	// down tears a replica down: its pod, and the volume podman made of
	// its ConfigMap, which `kube down` leaves.
	down := func(r replica) error {
		out, err := exec.Command(podman, "kube", "down", r.manifest).CombinedOutput()
		_ = exec.Command(podman, "volume", "rm", "--force", r.name+"-config").Run()
		if err != nil {
			return fmt.Errorf("podman kube down %s: %v\n%s", filepath.Base(r.manifest), err, out)
		}
		return nil
	}
	for _, r := range replicas {
		t.Cleanup(func() { _ = down(r) })
		runTool(t, dir, podman, "kube", "play", "--network", "host", r.manifest)
	}
	logs := func() string {
		var b strings.Builder
		for _, r := range replicas {
			out, _ := exec.Command(podman, "logs", "--tail", "15", r.name+"-pod-0-toolpulse").CombinedOutput()
			fmt.Fprintf(&b, "--- %s:\n%s", r.name, out)
		}
		return b.String()
	}

	// Both ready, exactly one leading.
	roles := make([]string, len(replicas))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready, leaders, alone := 0, 0, 0
		for i, r := range replicas {
			code, body := healthzBody("http://" + r.addr + "/healthz")
			roles[i] = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
			if code == http.StatusOK {
				ready++
				switch healthzRole(body) {
				case "leader":
					leaders++
				case "alone":
					alone++
				}
			}
		}
		if alone > 0 {
			t.Fatalf("a replica leads alone (no lease, epoch 0), as a single instance does: %q\n%s", roles, logs())
		}
		if ready == len(replicas) && leaders == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 60 s, not both replicas ready with exactly one leading; /healthz: %q\n%s", roles, logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("/healthz: %q", roles)
	for i, r := range replicas {
		want := "standby"
		if strings.Contains(roles[i], "leader") {
			want = "leader"
		}
		if code, _ := healthzBody("http://" + r.addr + "/healthz?role=leader"); (code == http.StatusOK) != (want == "leader") {
			t.Errorf("%s is the %s, and /healthz?role=leader answers %d", r.name, want, code)
		}
	}

	// The leader's runs are in the database, under its pod's name.
	deadline = time.Now().Add(30 * time.Second)
	for {
		nodes := pgtest.Exec(t, dsn, "SELECT DISTINCT node FROM results WHERE outcome = 'pass' ORDER BY node")
		if nodes != "" {
			if !strings.HasPrefix(nodes, "toolpulse-"+tag+"-") || strings.Contains(nodes, "\n") {
				t.Errorf("results.node is %q, want the leading pod's name alone", nodes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no passing run recorded within 30 s\n%s", logs())
		}
		time.Sleep(250 * time.Millisecond)
	}

	for _, r := range replicas {
		if err := down(r); err != nil {
			t.Error(err)
		}
	}
	for _, what := range [][]string{
		{"pod", "ps", "--quiet", "--filter", "name=" + tag},
		{"ps", "--all", "--quiet", "--filter", "name=" + tag},
		{"volume", "ls", "--quiet", "--filter", "name=" + tag},
	} {
		if out := strings.TrimSpace(runTool(t, dir, podman, what...)); out != "" {
			t.Errorf("podman %s: left behind after kube down:\n%s", strings.Join(what[:2], " "), out)
		}
	}
}

// healthzBody returns the status and body of a GET of url; 0 when it
// could not be asked.
func healthzBody(url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(body)
}

// healthzRole is what a /healthz body says the instance is: "leader",
// "standby", "alone" for a leader without a fleet's lease (epoch 0: a
// single instance, which leads alone), or "" when it says none of these.
func healthzRole(body string) string {
	var v struct {
		Role  string `json:"role"`
		Epoch int64  `json:"epoch"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return ""
	}
	switch {
	case v.Role == "leader" && v.Epoch == 0:
		return "alone"
	case v.Role == "leader" || v.Role == "standby":
		return v.Role
	}
	return ""
}
