package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// The file-system fault tests put the database on a file system that
// fails for real, under the real binary: a size-capped tmpfs that fills
// up, an ext4 image that the kernel turns read-only while the daemon
// writes, a read-only bind mount, a file or directory the daemon's user may
// not write. They need root (to mount, and to run the binary as another
// user); without it, or when a mount fails, they skip, unless
// TOOLPULSE_FS_FAULTS=required, which CI sets: then they fail.

// fsFaultsEnv makes the file-system fault tests fail instead of skipping.
const fsFaultsEnv = "TOOLPULSE_FS_FAULTS"

// fsNobody is the unprivileged uid and gid the read-only tests run the
// binary as.
const fsNobody = 65534

// fsUnavailable skips t because the machine cannot inject the fault, or
// fails it when the fault tests are required.
func fsUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(fsFaultsEnv) == "required" {
		t.Fatalf("%s, and %s=required", msg, fsFaultsEnv)
	}
	t.Skipf("%s (%s=required makes this a failure)", msg, fsFaultsEnv)
}

// fsNeedRoot skips (or fails) t unless the test runs as root.
func fsNeedRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		fsUnavailable(t, "needs root to mount file systems and switch users (euid %d)", os.Geteuid())
	}
}

// fsUnmount unmounts dir, waiting out a process that is still closing its
// files; it does nothing when dir is not a mount point any more.
func fsUnmount(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Unmount(dir, 0)
		switch {
		case err == nil, errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOENT):
			return
		case errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
		return
	}
}

// fsMount mounts source on dir and unmounts it when the test ends, failed
// or not.
func fsMount(t *testing.T, source, dir, fstype string, flags uintptr, data string) {
	t.Helper()
	if err := syscall.Mount(source, dir, fstype, flags, data); err != nil {
		fsUnavailable(t, "mount %s on %s (%s, %q): %v", source, dir, fstype, data, err)
	}
	t.Cleanup(func() { fsUnmount(t, dir) })
}

// fsProvider is the example provider on loopback; it counts the requests
// it gets.
func fsProvider(t *testing.T) (url string, p *provider.Provider) {
	t.Helper()
	p = provider.New()
	return e2e.Serve(t, p.Handler()), p
}

// fsConfig writes a daemon config to dir/checks.yaml: fast probes against
// providerURL, the database at db, the HTTP surface on addr.
func fsConfig(t *testing.T, dir, providerURL, db, addr string, probes ...string) string {
	t.Helper()
	cfg := harness.Fast(providerURL, "", probes...)
	cfg.Storage.Path, cfg.Server.Listen = db, addr
	return e2e.Config(t, dir, cfg)
}

// fsGet returns the status and body of GET addr+path, or 0 when the
// request failed.
func fsGet(addr, path string) (int, string) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var fsStoreErrors = regexp.MustCompile(`(?m)^toolpulse_store_errors_total\{op="record_run"\} (\d+)$`)

// fsRecordErrors reads toolpulse_store_errors_total{op="record_run"} from
// /metrics: 0 while no write has failed.
func fsRecordErrors(t *testing.T, addr string) int {
	t.Helper()
	code, body := fsGet(addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d: %s", code, body)
	}
	m := fsStoreErrors.FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// fsLoggedRun is one "probe run" line of the daemon's log.
type fsLoggedRun struct {
	operationID string
	recorded    bool // false: the line says recorded=false
}

// fsLoggedRuns returns the runs the daemon logged, in order.
func fsLoggedRuns(logs string) []fsLoggedRun {
	var out []fsLoggedRun
	for _, line := range completeLines(logs) {
		kv := parseLogLine(line)
		if kv["msg"] == "probe run" {
			out = append(out, fsLoggedRun{operationID: kv["operation_id"], recorded: kv["recorded"] != "false"})
		}
	}
	return out
}

// fsLogged returns the log lines with message msg, parsed.
func fsLogged(logs, msg string) []map[string]string {
	var out []map[string]string
	for _, line := range completeLines(logs) {
		if kv := parseLogLine(line); kv["msg"] == msg {
			out = append(out, kv)
		}
	}
	return out
}

// fsIntegrity runs PRAGMA integrity_check on db, opened read-write as an
// operator's sqlite3 would after a remount (which replays the WAL).
func fsIntegrity(t *testing.T, db string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+db+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := queryStrings(t, conn, "PRAGMA integrity_check"); len(got) != 1 || got[0] != "ok" {
		t.Errorf("PRAGMA integrity_check:\n%s", strings.Join(got, "\n"))
	}
}

// fsStored returns how many times each operation id is stored in db.
func fsStored(t *testing.T, db string) map[string]int {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[string]int{}
	for _, row := range queryStrings(t, conn, "SELECT operation_id, count(*) FROM results GROUP BY operation_id") {
		id, n, _ := strings.Cut(row, " | ")
		out[id], _ = strconv.Atoi(n)
	}
	return out
}

// fsFill writes to path until the file system is full.
func fsFill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0xa5}, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the file system: %v", err)
			}
			return
		}
	}
}

// TestFSDiskFullQueuesThenRecovers puts the database on a 8 MB tmpfs and
// fills the file system while four probes run: SQLite reports the disk
// full, and the daemon keeps probing, answers 503 on /healthz, keeps
// serving /metrics (where store errors rise) and logs each run as
// recorded=false queued=true. Once the filler is deleted it recovers on
// its own: /healthz is 200 again, every run it logged is in the database
// exactly once, and the database is sound.
func TestFSDiskFullQueuesThenRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a file system and waits for the recovery")
	}
	fsNeedRoot(t)
	e2e.Binary(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "fs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fsMount(t, "tmpfs", mnt, "tmpfs", 0, "size=8m,mode=0755")
	url, prov := fsProvider(t)
	requests := func() int { return prov.Requests("/search") }
	db, addr := filepath.Join(mnt, "results.db"), e2e.FreeAddr(t)
	d := e2e.Start(t, fsConfig(t, dir, url, db, addr, "alpha", "beta", "gamma", "delta"))
	d.WaitFor("runs to be recorded", func() bool { return countRows(t, db, "SELECT count(*) FROM results") >= 8 })
	errorsBefore := fsRecordErrors(t, addr)

	// The fault: nothing more fits.
	mark := len(d.Log.String())
	fsFill(t, filepath.Join(mnt, "filler"))
	since := func() string { return d.Log.String()[mark:] }
	d.WaitWithin("a run queued because the disk is full", 30*time.Second, func() bool {
		return strings.Contains(since(), "recorded=false queued=true")
	})
	if code, body := fsGet(addr, "/healthz"); code != http.StatusServiceUnavailable {
		d.T.Errorf("/healthz = %d %q while the disk is full, want 503", code, body)
	}
	reqs, runs := requests(), len(fsLoggedRuns(d.Log.String()))
	time.Sleep(2 * time.Second) // the fault lasts: probing, back-off and retries go on
	if got := requests(); got < reqs+4 {
		d.T.Errorf("the provider got %d requests in 2s of full disk, want probing to go on (4 probes every 200ms)", got-reqs)
	}
	if got := len(fsLoggedRuns(d.Log.String())); got < runs+4 {
		d.T.Errorf("%d runs logged in 2s of full disk, want the log to go on", got-runs)
	}
	if got := fsRecordErrors(t, addr); got <= errorsBefore {
		d.T.Errorf("toolpulse_store_errors_total{op=\"record_run\"} = %d during the fault, want it above %d", got, errorsBefore)
	}
	if code, body := fsGet(addr, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting to be written") {
		d.T.Errorf("/healthz = %d %q after 2s of full disk, want 503 naming the runs waiting", code, body)
	}
	failed := fsLogged(since(), "recording the run failed")
	if len(failed) == 0 || !strings.Contains(failed[0]["error"], "database or disk is full") {
		d.T.Errorf("the first failed write was logged as %v, want SQLite's \"database or disk is full\"", failed)
	}

	// The fault clears; nobody restarts anything.
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		d.T.Fatal(err)
	}
	d.WaitWithin("/healthz to answer 200 again", 60*time.Second, func() bool {
		code, _ := fsGet(addr, "/healthz")
		return code == http.StatusOK
	})
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Fatalf("SIGTERM: %v", err)
	}

	logs := d.Log.String()
	logged := fsLoggedRuns(logs)
	queued := 0
	for _, r := range logged {
		if !r.recorded {
			queued++
		}
	}
	if late := len(fsLogged(logs, "probe run recorded late")); queued == 0 || late != queued {
		d.T.Errorf("%d runs queued during the fault, %d recorded late; want every queued run written late", queued, late)
	}
	for _, msg := range []string{"they are lost", "dropped", "refuses the run"} {
		if strings.Contains(logs, msg) {
			d.T.Errorf("the log says %q: a run was lost", msg)
		}
	}
	fsIntegrity(t, db)
	stored := fsStored(t, db)
	for _, r := range logged {
		if n := stored[r.operationID]; n != 1 {
			d.T.Errorf("run %s (recorded=%v) is stored %d times, want once", r.operationID, r.recorded, n)
		}
	}
	if len(stored) != len(logged) {
		d.T.Errorf("%d runs stored, %d logged", len(stored), len(logged))
	}
	t.Logf("%d runs logged, %d of them queued while the disk was full and written after", len(logged), queued)
}

// fsSnapshot describes every file under dir (name, mode, size, content
// hash), to tell whether a command changed anything.
func fsSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %v %d", rel, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fsSharedDir returns a new directory that every user may read and
// traverse, removed at the end of the test. t.TempDir's parent is private
// to root.
func fsSharedDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fsNewDatabase creates a migrated, closed toolpulse database at path.
func fsNewDatabase(t *testing.T, path string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFSReadOnlyAtStartRefusesClearly starts the daemon on a database it
// cannot write: a read-only file, a read-only directory (for a new and
// for an existing database) and a read-only bind mount. It must not start
// probing results it could never store: it exits 70 at once, with a
// message that names the file and says it is read-only, without a panic,
// and leaves every file as it was.
//
// Why refuse rather than start and retry: a store that is read-only from
// the start is a setup to fix (ownership, a mount option, the wrong
// path), and SQLite opens a file it may not write read-only for the
// connection's whole life, so a chmod would not heal the running daemon
// anyway; a supervisor's restart does. A fault that begins while the
// daemon runs is queued and retried instead (see the ext4 test below).
func TestFSReadOnlyAtStartRefusesClearly(t *testing.T) {
	fsNeedRoot(t)
	bin := filepath.Join(fsSharedDir(t, "toolpulse-ro-bin-"), "toolpulse")
	src, err := os.ReadFile(e2e.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}

	nobody := &syscall.Credential{Uid: fsNobody, Gid: fsNobody}
	for _, tc := range []struct {
		name string
		// setup prepares dir (0755, holding checks.yaml) and returns the
		// directory to run in, whose results.db the daemon must open.
		setup func(t *testing.T, dir string) string
		as    *syscall.Credential // nil: root
	}{
		{name: "file read-only", as: nobody, setup: func(t *testing.T, dir string) string {
			fsNewDatabase(t, filepath.Join(dir, "results.db"))
			chmod(t, filepath.Join(dir, "results.db"), 0o444)
			chmod(t, dir, 0o777)
			return dir
		}},
		{name: "directory read-only, new database", as: nobody, setup: func(t *testing.T, dir string) string {
			chmod(t, dir, 0o555)
			return dir
		}},
		{name: "directory read-only, existing database", as: nobody, setup: func(t *testing.T, dir string) string {
			fsNewDatabase(t, filepath.Join(dir, "results.db"))
			chmod(t, filepath.Join(dir, "results.db"), 0o666)
			chmod(t, dir, 0o555)
			return dir
		}},
		{name: "read-only bind mount", setup: func(t *testing.T, dir string) string {
			fsNewDatabase(t, filepath.Join(dir, "results.db"))
			ro := filepath.Join(fsSharedDir(t, "toolpulse-ro-"), "mnt")
			if err := os.Mkdir(ro, 0o755); err != nil {
				t.Fatal(err)
			}
			fsMount(t, dir, ro, "", syscall.MS_BIND, "")
			fsMount(t, "", ro, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, "")
			return ro
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(fsSharedDir(t, "toolpulse-ro-"), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			fsConfig(t, dir, "http://127.0.0.1:9", "results.db", "", "alpha")
			runDir := tc.setup(t, dir)
			before := fsSnapshot(t, dir)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-c", filepath.Join(runDir, "checks.yaml"), "run", "--grace", "1s")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: tc.as}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("toolpulse started on a read-only database and ran until killed; stderr:\n%s", stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitSoftware {
				t.Errorf("exit: %v, want status %d; stderr:\n%s", err, exitSoftware, stderr.String())
			}
			msg := stderr.String()
			db := filepath.Join(runDir, "results.db")
			if !strings.HasPrefix(msg, "toolpulse: the database "+db+" is read-only: ") || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr:\n%s\nwant one line saying that %s is read-only", msg, db)
			}
			for _, bad := range []string{"panic", "goroutine ", "toolpulse started", "probe run"} {
				if strings.Contains(msg+stdout.String(), bad) {
					t.Errorf("the output contains %q:\n%s%s", bad, stdout.String(), msg)
				}
			}
			if after := fsSnapshot(t, dir); after != before {
				t.Errorf("the failed start changed the files:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestFSReadOnlyWhileRunningDrainsAsLost puts the database on an ext4
// image mounted with errors=remount-ro and has the kernel declare a file
// system error while the daemon writes: the file system turns read-only
// at once and SQLite reports a disk I/O error. The daemon keeps probing,
// answers 503, queues the runs, and keeps its metrics and logs; on
// SIGTERM it tries the queue once more, then logs the runs it could not
// write as lost and exits 0. After a remount the database is sound and
// holds every run recorded before the fault (see the sync below).
//
// Such a file system cannot be made writable again while mounted, so the
// recovery half of the promise is the disk-full test's.
func TestFSReadOnlyWhileRunningDrainsAsLost(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts an ext4 image and breaks it")
	}
	fsNeedRoot(t)
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("no loop devices on this machine: %v", err)
	}
	tools := map[string]string{}
	for _, name := range []string{"mkfs.ext4", "losetup", "e2fsck"} {
		path, err := exec.LookPath(name)
		if err != nil {
			fsUnavailable(t, "%s not found (e2fsprogs, util-linux): %v", name, err)
		}
		tools[name] = path
	}
	e2e.Binary(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "store.ext4"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(32 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(tools["mkfs.ext4"], "-q", "-F", img).CombinedOutput(); err != nil {
		fsUnavailable(t, "mkfs.ext4: %v\n%s", err, out)
	}
	out, err := exec.Command(tools["losetup"], "--find", "--show", img).CombinedOutput()
	if err != nil {
		fsUnavailable(t, "losetup: %v\n%s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(tools["losetup"], "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v\n%s", dev, err, out)
		}
	})
	fsMount(t, dev, mnt, "ext4", 0, "errors=remount-ro")
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
	if _, err := os.Stat(trigger); err != nil {
		fsUnavailable(t, "cannot inject an ext4 error: %v", err)
	}

	url, prov := fsProvider(t)
	requests := func() int { return prov.Requests("/search") }
	db, addr := filepath.Join(mnt, "results.db"), e2e.FreeAddr(t)
	d := e2e.Start(t, fsConfig(t, dir, url, db, addr, "alpha", "beta", "gamma"))
	d.WaitFor("runs to be recorded", func() bool { return countRows(t, db, "SELECT count(*) FROM results") >= 6 })
	errorsBefore := fsRecordErrors(t, addr)

	// synchronous=NORMAL leaves the last commits to the kernel's
	// write-back, and an ext4 error aborts the journal: what was not yet
	// written back goes with it, as on a power cut. Syncing first makes
	// "recorded before the fault" mean "recorded before the sync".
	durable := map[string]bool{}
	for _, r := range fsLoggedRuns(d.Log.String()) {
		if r.recorded {
			durable[r.operationID] = true
		}
	}
	syscall.Sync()
	mark := len(d.Log.String())
	if err := os.WriteFile(trigger, []byte("1"), 0o200); err != nil {
		fsUnavailable(t, "cannot inject an ext4 error: %v", err)
	}
	since := func() string { return d.Log.String()[mark:] }
	d.WaitWithin("a run queued on the read-only file system", 30*time.Second, func() bool {
		return strings.Contains(since(), "recorded=false queued=true")
	})
	if code, body := fsGet(addr, "/healthz"); code != http.StatusServiceUnavailable {
		d.T.Errorf("/healthz = %d %q on a read-only file system, want 503", code, body)
	}
	reqs, runs := requests(), len(fsLoggedRuns(d.Log.String()))
	time.Sleep(2 * time.Second)
	if got := requests(); got < reqs+3 {
		d.T.Errorf("the provider got %d requests in 2s of read-only file system, want probing to go on", got-reqs)
	}
	if got := len(fsLoggedRuns(d.Log.String())); got < runs+3 {
		d.T.Errorf("%d runs logged in 2s of read-only file system, want the log to go on", got-runs)
	}
	if got := fsRecordErrors(t, addr); got <= errorsBefore {
		d.T.Errorf("toolpulse_store_errors_total{op=\"record_run\"} = %d during the fault, want it above %d", got, errorsBefore)
	}
	if code, _ := fsGet(addr, "/healthz"); code != http.StatusServiceUnavailable {
		d.T.Errorf("/healthz = %d after 2s of read-only file system, want 503", code)
	}
	failed := fsLogged(since(), "recording the run failed")
	if len(failed) == 0 || !strings.Contains(failed[0]["error"], "disk I/O error") {
		d.T.Errorf("the first failed write was logged as %v, want SQLite's \"disk I/O error\"", failed)
	}

	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Fatalf("SIGTERM on a read-only file system: %v, want exit 0", err)
	}
	logs := d.Log.String()
	var queued []string
	for _, r := range fsLoggedRuns(logs) {
		if !r.recorded {
			queued = append(queued, r.operationID)
		}
	}
	late := len(fsLogged(logs, "probe run recorded late"))
	lost := fsLogged(logs, "stopping with runs that could not be written; they are lost")
	if want := strconv.Itoa(len(queued) - late); len(lost) != 1 || lost[0]["runs"] != want || lost[0]["level"] != "ERROR" {
		d.T.Errorf("lost runs logged as %v, want one ERROR line with runs=%s (%d queued, %d written late)", lost, want, len(queued), late)
	}
	if !strings.Contains(logs, `msg="toolpulse stopped"`) || strings.Contains(logs, "panic") {
		d.T.Errorf("the daemon did not stop cleanly: no \"toolpulse stopped\" line, or a panic")
	}

	// The operator's side: unmount, check the file system, mount again.
	fsUnmount(t, mnt)
	if out, err := exec.Command(tools["e2fsck"], "-f", "-y", dev).CombinedOutput(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() > 2 { // 1 and 2: errors corrected
			d.T.Fatalf("e2fsck: %v\n%s", err, out)
		}
	}
	fsMount(t, dev, mnt, "ext4", 0, "")
	fsIntegrity(t, db)
	stored := fsStored(t, db)
	survived := 0
	for _, r := range fsLoggedRuns(logs) {
		n := stored[r.operationID]
		switch {
		case n > 1:
			d.T.Errorf("run %s stored %d times", r.operationID, n)
		case durable[r.operationID] && n != 1:
			d.T.Errorf("run %s was recorded before the fault but is not in the database", r.operationID)
		case !r.recorded && n != 0 && !slices.Contains(queued, r.operationID):
			d.T.Errorf("run %s was never written but is in the database", r.operationID)
		case r.recorded && !durable[r.operationID] && n == 1:
			survived++
		}
	}
	for _, id := range queued {
		if stored[id] != 0 {
			d.T.Errorf("run %s, logged as lost, is in the database", id)
		}
	}
	t.Logf("%d runs recorded before the sync, all stored; %d runs queued and lost; %d recorded between the sync and the fault survived",
		len(durable), len(queued)-late, survived)
}

// TestStoreFaultClassification: the errors SQLite gives for faults of the
// store (full, busy, read-only, cannot open) are not permanent, and may
// be retried; those that refuse one record (a constraint, a type mismatch,
// a duplicate operation id) are, and keep saying so through wrapping.
func TestStoreFaultClassification(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	open := func(params string) *sql.DB {
		t.Helper()
		conn, err := sql.Open("sqlite3", "file:"+path+"?"+params)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetMaxOpenConns(1)
		return conn
	}
	w := open("_journal_mode=WAL&_busy_timeout=0")
	for _, q := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INTEGER CHECK (n >= 0))",
		"INSERT INTO t (name, n) VALUES ('a', 1)",
	} {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fails := func(conn *sql.DB, q string) error {
		_, err := conn.ExecContext(ctx, q)
		if err == nil {
			t.Fatalf("%s: no error", q)
		}
		return err
	}

	locker := open("_busy_timeout=0&_txlock=immediate")
	tx, err := locker.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	busy := fails(w, "INSERT INTO t (name, n) VALUES ('b', 1)")
	tx.Rollback()

	full := open("_busy_timeout=5000")
	var pages int
	if err := full.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := full.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}

	missing, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "missing", "x.db")+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()

	store, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := results.Result{OperationID: "op-1", Probe: "p", Outcome: results.Pass, StartedAt: time.Now(),
		Consumer: results.ConsumerRef{Name: "c", Version: "1", RuleHash: "h"}}
	if err := store.Record(ctx, r); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		err       error
		text      string // SQLite's words for it, to show the case is what it says
		permanent bool
	}{
		{"nil", nil, "", false},
		{"busy", busy, "database is locked", false},
		{"full", fails(full, "INSERT INTO t (name, n) VALUES ('big', 1), ('"+strings.Repeat("x", 1<<16)+"', 2)"), "database or disk is full", false},
		{"read-only", fails(open("mode=ro"), "INSERT INTO t (name, n) VALUES ('c', 1)"), "attempt to write a readonly database", false},
		{"cannot open", missing.PingContext(ctx), "unable to open database file", false},
		{"context", context.DeadlineExceeded, "deadline exceeded", false},
		{"other", errors.New("sql: database is closed"), "closed", false},
		{"unique", fails(w, "INSERT INTO t (name, n) VALUES ('a', 2)"), "UNIQUE constraint failed", true},
		{"not null", fails(w, "INSERT INTO t (name, n) VALUES (NULL, 2)"), "NOT NULL constraint failed", true},
		{"check", fails(w, "INSERT INTO t (name, n) VALUES ('d', -1)"), "CHECK constraint failed", true},
		{"mismatch", fails(w, "INSERT INTO t (id, name) VALUES ('x', 'e')"), "datatype mismatch", true},
		{"duplicate operation id", store.Record(ctx, r), "duplicate operation_id", true},
	} {
		err := tc.err
		if err != nil && !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: the error is %q, want one saying %q", tc.name, err, tc.text)
		}
		if tc.name != "nil" && err == nil {
			t.Errorf("%s: no error to classify", tc.name)
			continue
		}
		if got := sqlite.Permanent(err); got != tc.permanent {
			t.Errorf("%s: Permanent(%v) = %v, want %v", tc.name, err, got, tc.permanent)
		}
		if got := sqlite.Permanent(fmt.Errorf("runner: record: %w", err)); err != nil && got != tc.permanent {
			t.Errorf("%s, wrapped: Permanent = %v, want %v", tc.name, got, tc.permanent)
		}
	}
}
