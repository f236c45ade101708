//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// livePolicy is a session policy whose egress allowlist is hosts and whose
// shell rules are denyPrograms.
func livePolicy(hosts []string, denyPrograms []string, broken bool) string {
	field := "allowDomains"
	if broken {
		field = "allowDomainz"
	}
	dp := ""
	if len(denyPrograms) > 0 {
		dp = fmt.Sprintf(", bash: {denyPrograms: [%s]}", strings.Join(denyPrograms, ", "))
	}
	return fmt.Sprintf("version: 1\nharness: claude-code\nsession:\n  bound: {network: {enforce: sandbox, %s: [%s]}%s}\n",
		field, strings.Join(hosts, ", "), dp)
}

// auditLines parses the audit file line by line; a line that does not parse
// fails the test.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line does not parse: %v: %q", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// writePolicyDir writes a policy in a directory of its own under dir (the
// sandbox makes that directory read-only) and returns its path.
func writePolicyDir(t *testing.T, dir, content string) string {
	t.Helper()
	polDir := filepath.Join(dir, "policy")
	if err := os.Mkdir(polDir, 0o777); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(polDir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return pol
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out after %v waiting for %s", limit, what)
}

func reloads(t *testing.T, audit, decision string) int {
	n := 0
	for _, m := range auditLines(t, audit) {
		if m["msg"] == "policy reload" && m["decision"] == decision {
			n++
		}
	}
	return n
}

// TestLivePolicy drives one sandboxd run through a session's policy edits:
// removing a domain cuts a download in progress; a broken edit keeps the old
// policy and is reported with its field path; an editor's atomic rename is
// seen; a hook ruling after a revocation is a deny; and the sandbox cannot
// edit its own policy.
func TestLivePolicy(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	polDir := filepath.Join(dir, "policy")
	os.Mkdir(polDir, 0o777)
	pol := filepath.Join(polDir, "policy.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(pol, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(livePolicy([]string{"allowed.test"}, nil, false))
	phase := func(n int) string { return filepath.Join(dir, fmt.Sprintf("phase%d", n)) }
	waitPhase := func(n int) string {
		return fmt.Sprintf("i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done", phase(n))
	}
	payload := `{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"t1"}`
	hook := fmt.Sprintf(`echo '%s' | %s check --harness claude-code`, payload, hookgateBin)
	script := strings.Join([]string{
		hook + ` >"$D/hook1.out"; echo "hook1 $?"`,
		`curl -sS --max-time 40 -o /dev/null https://allowed.test/slow 2>/dev/null; echo "slow-exit $?"`,
		`curl -sS -o /dev/null -w 'after %{http_connect}\n' https://allowed.test/ 2>/dev/null`,
		hook + ` >"$D/hook2.out"; echo "hook2 $?"`,
		`touch "$D/phase1"`, waitPhase(2),
		`curl -sS -o /dev/null -w 'broken %{http_code}\n' https://denied.test/ 2>/dev/null`,
		`touch "$D/phase3"`, waitPhase(4),
		`curl -sS -o /dev/null -w 'renamed %{http_code}\n' https://allowed.test/ 2>/dev/null`,
		`echo evil >> "$P" 2>/dev/null && echo wrote-policy`,
		`echo "version: 1" > "$D/evil.yaml"; mv "$D/evil.yaml" "$P" 2>/dev/null && echo replaced-policy`,
		`echo "version: 1" > "$(dirname "$P")/new.yaml" 2>/dev/null && echo created-in-policy-dir`,
		`rm -f "$P" 2>/dev/null; [ -e "$P" ] || echo removed-policy`,
		`echo evil > "$RT/status.json" 2>/dev/null && echo wrote-runtime`,
		`echo done`,
	}, "\n")

	auditPath := filepath.Join(dir, "audit.jsonl")
	auditFile := func() string { return auditPath }
	done := make(chan runResult, 1)
	go func() {
		done <- w.sandboxd(t, runOpts{noAllow: true, timeout: 120 * time.Second, audit: auditPath,
			flags:    []string{"--policy", pol, "--write", dir}, // D: the test's signalling directory
			extraEnv: []string{"D=" + dir, "P=" + pol},
			argv:     []string{"sh", "-c", `RT=/run/$BARRY_SANDBOX_ID; [ -d "$RT" ] || RT=/tmp/$BARRY_SANDBOX_ID; ` + script}})
	}()

	// 1. A download in progress is cut when its domain is removed.
	waitFor(t, "the /slow download to start", 30*time.Second, func() bool {
		_, http, _, _ := w.seen()
		for _, h := range http {
			if h == "allowed.test /slow" {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond)
	written := time.Now()
	write(livePolicy([]string{"denied.test"}, []string{`"rm"`}, false))
	var cut time.Duration
	select {
	case end := <-w.slowEnd:
		cut = end.Sub(written)
	case <-time.After(10 * time.Second):
		t.Fatal("the download was not cut within 10 s of removing its domain")
	}
	t.Logf("write-to-cut latency: %v", cut)
	if cut > 2*time.Second {
		t.Errorf("download cut %v after the edit; the proxy promises under 1 s plus the watcher's debounce", cut)
	}

	// 2. A broken edit keeps the last good policy.
	waitFor(t, "phase1", 30*time.Second, func() bool { _, err := os.Stat(phase(1)); return err == nil })
	write(livePolicy([]string{"allowed.test"}, nil, true))
	waitFor(t, "the refused reload in the audit", 10*time.Second, func() bool { return reloads(t, auditFile(), "deny") >= 1 })
	os.WriteFile(phase(2), nil, 0o644)

	// 3. An editor's write-to-temp-and-rename is seen.
	waitFor(t, "phase3", 30*time.Second, func() bool { _, err := os.Stat(phase(3)); return err == nil })
	tmp := filepath.Join(polDir, ".policy.yaml.swp")
	os.WriteFile(tmp, []byte(livePolicy([]string{"allowed.test"}, nil, false)), 0o644)
	if err := os.Rename(tmp, pol); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the renamed policy's reload", 10*time.Second, func() bool { return reloads(t, auditFile(), "allow") >= 2 })
	os.WriteFile(phase(4), nil, 0o644)

	var r runResult
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("sandboxd did not finish")
	}
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []string{"hook1 0", "", "after 403", "hook2 0", "broken 200", "renamed 200", "done"}
	if len(lines) != len(want) {
		t.Fatalf("stdout %q, want lines like %q\nstderr:\n%s", lines, want, r.stderr)
	}
	for i, l := range lines {
		if i == 1 {
			if l == "slow-exit 0" || !strings.HasPrefix(l, "slow-exit ") {
				t.Errorf("the slow download ended %q, want a failure", l)
			}
			continue
		}
		if l != want[i] {
			t.Errorf("line %d: %q, want %q", i, l, want[i])
		}
	}
	// The ruling before the revocation had no opinion (allow); after it, deny.
	h1, _ := os.ReadFile(filepath.Join(dir, "hook1.out"))
	h2, _ := os.ReadFile(filepath.Join(dir, "hook2.out"))
	if strings.Contains(string(h1), "deny") || !strings.Contains(string(h2), `"permissionDecision":"deny"`) || !strings.Contains(string(h2), "bash.denyPrograms") {
		t.Errorf("hook rulings: before %q, after revocation %q", h1, h2)
	}
	// The broken edit was reported on stderr with its field path.
	if !strings.Contains(r.stderr, "session.bound.network.allowDomainz: unknown field") || !strings.Contains(r.stderr, "keeping the last good policy") {
		t.Errorf("stderr does not report the broken edit:\n%s", r.stderr)
	}
	// The host's policy is the last one the test wrote.
	if b, _ := os.ReadFile(pol); string(b) != livePolicy([]string{"allowed.test"}, nil, false) {
		t.Errorf("policy file changed from inside: %q", b)
	}
	// Every audit line parses and names the sandbox and the policy; reloads
	// carry the old and new fingerprints.
	for _, m := range auditLines(t, auditFile()) {
		if m["sandbox"] == "" || m["sandbox"] == nil || m["policy"] == nil || m["policy"] == "" {
			t.Errorf("audit line without sandbox or policy: %v", m)
		}
		if m["msg"] == "policy reload" && m["decision"] == "allow" && (m["old_policy"] == m["new_policy"] || m["new_policy"] == nil) {
			t.Errorf("reload line without a fingerprint change: %v", m)
		}
	}
	if !strings.Contains(r.stderr, "connect ") || !strings.Contains(r.stderr, " denied") {
		t.Errorf("no exit summary on stderr:\n%s", r.stderr)
	}
}

// TestStatusAndAuditUnderLoad: while a sandbox runs, "sandboxd status
// --json" lists it with its pid, command, policy and counters; 10,000
// concurrent DNS decisions inside it leave an audit file whose every line
// parses, and the exit summary counts them.
func TestStatusAndAuditUnderLoad(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	pol := writePolicyDir(t, dir, livePolicy([]string{"allowed.test"}, nil, false))
	auditPath := filepath.Join(dir, "audit.jsonl")
	// 40 threads x 250 queries for names nobody allowed: each is refused by
	// the DNS proxy without an upstream query.
	py := `
import socket, struct, threading, os, sys, time
def q(tid):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
    for i in range(250):
        qid = (tid * 250 + i) & 0xffff
        name = b"".join(bytes([len(l)]) + l for l in [b"n%d-%d" % (tid, i), b"load", b"test"]) + b"\0"
        s.sendto(struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), ("127.0.0.1", 53))
        try: s.recv(4096)
        except Exception as e: print("timeout", e); return
ts = [threading.Thread(target=q, args=(t,)) for t in range(40)]
[t.start() for t in ts]; [t.join() for t in ts]
open(os.environ["D"] + "/loaded", "w").close()
for _ in range(600):
    if os.path.exists(os.environ["D"] + "/stop"): break
    time.sleep(0.05)
print("done")
`
	done := make(chan runResult, 1)
	go func() {
		done <- w.sandboxd(t, runOpts{noAllow: true, timeout: 120 * time.Second, audit: auditPath,
			flags: []string{"--policy", pol, "--write", dir}, extraEnv: []string{"D=" + dir},
			argv: []string{"python3", "-c", py}})
	}()
	waitFor(t, "the load to finish", 90*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "loaded")); return err == nil })

	// sandboxd status sees the running sandbox (same uid, same runtime base).
	var list []struct {
		ID, PolicyFile, Fingerprint string
		PID                         int
		Command                     []string
		Counters                    map[string][2]int64
		Running                     bool
	}
	var statusOut []byte
	waitFor(t, "status to show the DNS decisions", 10*time.Second, func() bool {
		out, err := execIn(w.host.Name, sandboxdBin, "status", "--json")
		if err != nil {
			return false
		}
		statusOut = out
		list = nil
		if json.Unmarshal(out, &list) != nil {
			return false
		}
		for _, s := range list {
			if s.PolicyFile == pol && s.Running && s.Counters["dns"][1] >= 10000 {
				return true
			}
		}
		return false
	})
	found := false
	for _, s := range list {
		if s.PolicyFile == pol {
			found = true
			if s.PID <= 0 || len(s.Command) == 0 || s.Command[0] != "python3" || len(s.Fingerprint) != 64 {
				t.Errorf("status entry %+v", s)
			}
		}
	}
	if !found {
		t.Fatalf("status does not list the sandbox: %s", statusOut)
	}
	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	r := <-done
	if r.code != 0 || !strings.Contains(r.stdout, "done") || strings.Contains(r.stdout, "timeout") {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	lines := auditLines(t, auditPath)
	dnsDenied := 0
	for _, m := range lines {
		if m["kind"] == "dns" && m["decision"] == "deny" {
			dnsDenied++
		}
	}
	if dnsDenied < 10000 {
		t.Fatalf("%d DNS denials in the audit, want 10,000", dnsDenied)
	}
	if !strings.Contains(r.stderr, "dns 0 allowed 10000 denied") {
		t.Errorf("exit summary: %q", r.stderr)
	}
	if seen, _, _, _ := w.seen(); len(seen) != 0 {
		t.Errorf("the world's DNS saw %d queries for refused names", len(seen))
	}
}

// execIn runs a command in the named network namespace.
func execIn(ns string, args ...string) ([]byte, error) {
	return exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).Output()
}

// TestSIGHUPReloads: under --policy, SIGHUP reloads the policy (an audit
// line) and is not forwarded to the command.
func TestSIGHUPReloads(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	pol := writePolicyDir(t, dir, livePolicy([]string{"allowed.test"}, nil, false))
	auditPath := filepath.Join(dir, "audit.jsonl")
	done := make(chan runResult, 1)
	go func() {
		done <- w.sandboxd(t, runOpts{noAllow: true, timeout: 60 * time.Second, audit: auditPath,
			flags: []string{"--policy", pol, "--write", dir}, extraEnv: []string{"D=" + dir},
			argv: []string{"sh", "-c", `trap 'echo got-hup' HUP; touch "$D/ready"; i=0; while [ ! -e "$D/stop" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo done`}})
	}()
	waitFor(t, "the command to start", 30*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "ready")); return err == nil })
	var pid int
	waitFor(t, "status to list the sandbox", 10*time.Second, func() bool {
		out, err := execIn(w.host.Name, sandboxdBin, "status", "--json")
		var list []struct {
			PID        int
			PolicyFile string
		}
		if err != nil || json.Unmarshal(out, &list) != nil {
			return false
		}
		for _, s := range list {
			if s.PolicyFile == pol {
				pid = s.PID
				return true
			}
		}
		return false
	})
	if err := unix.Kill(pid, unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload line", 10*time.Second, func() bool {
		for _, m := range auditLines(t, auditPath) {
			if m["msg"] == "policy reload" && m["reason"] == "policy reloaded, unchanged" {
				return true
			}
		}
		return false
	})
	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	r := <-done
	if r.code != 0 || strings.TrimSpace(r.stdout) != "done" {
		t.Fatalf("exit %d stdout %q (SIGHUP must not reach the command) stderr %q", r.code, r.stdout, r.stderr)
	}
}
