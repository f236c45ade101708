package policywatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const watchBase = "version: 1\nharness: claude-code\n"

func waitChange(t *testing.T, ch <-chan Change) Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported within 5s")
		return Change{}
	}
}

func TestWatchFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.yaml")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("policy.yaml", watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [a.example]}}}\n")
	ch := make(chan Change, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := WatchFile(ctx, p, 10*time.Millisecond, func(c Change) { ch <- c })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first := w.Current().Fingerprint

	// An editor's write-to-temp-and-rename is seen.
	write("policy.yaml.tmp", watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [b.example]}}}\n")
	if err := os.Rename(filepath.Join(dir, "policy.yaml.tmp"), p); err != nil {
		t.Fatal(err)
	}
	c := waitChange(t, ch)
	if c.Err != nil || c.Old.Fingerprint != first || c.New.Bound.Network.AllowDomains[0] != "b.example" {
		t.Fatalf("rename: %+v", c)
	}
	if w.Current() != c.New {
		t.Fatal("Current is not the new policy")
	}

	// A broken edit keeps the last good policy and names the field path.
	write("policy.yaml", watchBase+"session: {bound: {network: {actoins: [write]}}}\n")
	c = waitChange(t, ch)
	if c.Err == nil || !strings.Contains(c.Err.Error(), "session.bound.network.actoins: unknown field") {
		t.Fatalf("broken edit: %+v", c)
	}
	if w.Current().Bound.Network.AllowDomains[0] != "b.example" {
		t.Fatal("broken edit changed the policy")
	}

	// A deleted file keeps the last good policy.
	os.Remove(p)
	c = waitChange(t, ch)
	if c.Err == nil || !strings.Contains(c.Err.Error(), "keeping the last good policy") {
		t.Fatalf("delete: %+v", c)
	}

	// A symlink swap (as a ConfigMap update does) is seen.
	os.Mkdir(filepath.Join(dir, "v1"), 0o755)
	write("v1/policy.yaml", watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [c.example]}}}\n")
	if err := os.Symlink("v1/policy.yaml", p); err != nil {
		t.Fatal(err)
	}
	c = waitChange(t, ch)
	if c.Err != nil || c.New.Bound.Network.AllowDomains[0] != "c.example" {
		t.Fatalf("symlink: %+v", c)
	}
	os.Mkdir(filepath.Join(dir, "v2"), 0o755)
	write("v2/policy.yaml", watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [d.example]}}}\n")
	os.Symlink("v2/policy.yaml", filepath.Join(dir, "next"))
	if err := os.Rename(filepath.Join(dir, "next"), p); err != nil {
		t.Fatal(err)
	}
	c = waitChange(t, ch)
	if c.Err != nil || c.New.Bound.Network.AllowDomains[0] != "d.example" {
		t.Fatalf("symlink swap: %+v", c)
	}

	// Reload reports even unchanged content (SIGHUP is visible).
	w.Reload()
	c = waitChange(t, ch)
	if c.Err != nil || c.New.Bound.Network.AllowDomains[0] != "d.example" || c.Old.Fingerprint != c.New.Fingerprint {
		t.Fatalf("forced reload: %+v", c)
	}
	// A burst of edits is one change.
	for i := 0; i < 5; i++ {
		write("policy.yaml.tmp", watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [e.example]}}}\n")
		os.Rename(filepath.Join(dir, "policy.yaml.tmp"), p)
	}
	c = waitChange(t, ch)
	if c.Err != nil || c.New.Bound.Network.AllowDomains[0] != "e.example" {
		t.Fatalf("burst: %+v", c)
	}
	select {
	case extra := <-ch:
		t.Fatalf("unexpected extra change %+v", extra)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestWatchFileRefusesBadStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(p, []byte("version: 1\n"), 0o644)
	if _, err := WatchFile(context.Background(), p, 0, nil); err == nil {
		t.Fatal("a policy that does not resolve was watched")
	}
}

// TestWatchFileHoldsItsDirectory: replacing the policy's directory (moving
// it away and putting another in its place) cannot substitute a policy.
func TestWatchFileHoldsItsDirectory(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "cfg")
	os.Mkdir(dir, 0o755)
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte(watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [a.example]}}}\n"), 0o644)
	ch := make(chan Change, 16)
	w, err := WatchFile(context.Background(), p, 10*time.Millisecond, func(c Change) { ch <- c })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(dir, filepath.Join(top, "moved")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(dir, 0o755)
	os.WriteFile(p, []byte(watchBase+"session: {bound: {network: {enforce: sandbox, allowDomains: [evil.example]}}}\n"), 0o644)
	// A forced reload reports what it read: the held directory's policy.
	w.Reload()
	for {
		c := waitChange(t, ch)
		if c.Err != nil {
			continue // events from the move itself
		}
		if got := c.New.Bound.Network.AllowDomains[0]; got != "a.example" {
			t.Fatalf("a replaced directory's policy was applied: %s", got)
		}
		break
	}
	if got := w.Current().Bound.Network.AllowDomains[0]; got != "a.example" {
		t.Fatalf("current policy is %s", got)
	}
}
