package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// StatusFile is the name of the status file in a sandbox's runtime
// directory.
const StatusFile = "status.json"

// Status is what "sandboxd status" shows of one running sandbox. It holds no
// credentials.
type Status struct {
	ID         string    `json:"id"`
	PID        int       `json:"pid"`
	Command    []string  `json:"command"`
	Started    time.Time `json:"started"`
	PolicyFile string    `json:"policyFile,omitempty"`
	// Harness and Mode are a launched harness's ("sandboxd launch").
	Harness string `json:"harness,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Proc is the sandbox's /proc: "fresh", or "container" where the
	// kernel refused a fresh one (procjail.ProcMode); empty on macOS.
	Proc string `json:"proc,omitempty"`
	// SandboxMode is "nested" or "container" (ModeNested, ModeContainer).
	SandboxMode string              `json:"sandboxMode,omitempty"`
	Fingerprint string              `json:"fingerprint"`
	Counters    map[string][2]int64 `json:"counters"`
	Updated     time.Time           `json:"updated"`
	// Running is filled in by ListStatuses: the pid is alive.
	Running bool `json:"running"`
}

// writeStatus replaces dir/status.json atomically.
func writeStatus(dir string, s Status) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".status-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, StatusFile))
}

// RuntimeBase is where per-sandbox runtime directories go: $XDG_RUNTIME_DIR,
// else /run for root, else the temporary directory. The first two are
// memory file systems made for sockets; each sandbox's directory is 0700.
func RuntimeBase() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	if os.Geteuid() == 0 {
		if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
			return "/run"
		}
	}
	return os.TempDir()
}

// runtimePrefix starts every sandbox runtime directory's name.
const runtimePrefix = "sandboxd-"

// ListStatuses reads the status of every sandbox of this user under base,
// oldest first, marking whether each one's process is alive. Directories
// without a readable status are skipped.
func ListStatuses(base string) ([]Status, error) {
	ents, err := os.ReadDir(base)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("runtime directory %s: %w", base, err)
	}
	var out []Status
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runtimePrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if fi, err := os.Stat(dir); err != nil || !ownedBySelf(fi) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, StatusFile))
		if err != nil {
			continue
		}
		var s Status
		if json.Unmarshal(b, &s) != nil {
			continue
		}
		s.Running = s.PID > 0 && syscall.Kill(s.PID, 0) == nil
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// ownedBySelf says whether fi is owned by sandboxd's effective uid.
func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// startingGrace is how long a runtime directory may be without its status
// file: a session writes it within milliseconds of making the directory
// (firstStatus), so one older than this lost its sandboxd before then.
const startingGrace = 10 * time.Minute

// PruneStale removes the runtime directories under base of this user's
// sandboxes whose sandboxd is gone (killed before it could clean up): those
// with a status file naming a process that no longer exists, and those
// without one older than startingGrace. A directory without a status and
// younger than that (a sandbox still starting) is left alone.
func PruneStale(base string) {
	list, err := ListStatuses(base)
	if err != nil {
		return
	}
	if ents, err := os.ReadDir(base); err == nil {
		for _, e := range ents {
			name := e.Name()
			if !e.IsDir() || !strings.HasPrefix(name, runtimePrefix) || strings.HasSuffix(name, privateHomeSuffix) {
				continue
			}
			dir := filepath.Join(base, name)
			fi, err := os.Stat(dir)
			if err != nil || !ownedBySelf(fi) || time.Since(fi.ModTime()) < startingGrace {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, StatusFile)); errors.Is(err, os.ErrNotExist) {
				os.RemoveAll(dir)
				os.RemoveAll(dir + privateHomeSuffix)
			}
		}
	}
	for _, s := range list {
		if s.Running || s.ID == "" || !strings.HasPrefix(s.ID, runtimePrefix) || strings.ContainsAny(s.ID, "/\\") {
			continue
		}
		os.RemoveAll(filepath.Join(base, s.ID))
		os.RemoveAll(filepath.Join(base, s.ID+privateHomeSuffix))
	}
}

// runtimeDir makes the session's runtime directory (its id) and opens the
// audit stream.
func (s *session) runtimeDir() (func(), error) {
	// Nothing before this step outlives a signal's default action (the
	// init dies with sandboxd); the runtime directory would.
	s.sig.Subscribed()
	PruneStale(RuntimeBase())
	dir, err := os.MkdirTemp(RuntimeBase(), runtimePrefix)
	if err != nil {
		return nil, fmt.Errorf("runtime directory: %w", err)
	}
	s.dir, s.id = dir, filepath.Base(dir)
	stream, err := OpenAudit(s.opts.AuditPath, s.id)
	if err != nil {
		return func() { os.RemoveAll(dir) }, err
	}
	s.stream = stream
	stream.SetPolicy(s.live.Current().fingerprint)
	s.log = stream.Logger()
	return func() { stream.Close(); os.RemoveAll(dir) }, nil
}

// firstStatus writes the status file before the sandbox starts: a sandbox
// that "sandboxd status" cannot show (and PruneStale cannot find) does not
// start.
func (s *session) firstStatus() (func(), error) {
	s.status = Status{ID: s.id, PID: os.Getpid(), Command: s.opts.Command, Started: time.Now().UTC(), PolicyFile: s.opts.PolicyFile, Proc: string(s.proc), SandboxMode: s.sandboxMode()}
	if s.launched != nil {
		s.status.Harness, s.status.Mode = s.launched.harness, s.launched.mode
	}
	if s.live.Path() != "" {
		s.status.PolicyFile = s.live.Path()
	}
	if err := s.writeStatus(); err != nil {
		return nil, fmt.Errorf("status file: %w", err)
	}
	return nil, nil
}

// writeStatus writes the session's status with the current policy's
// fingerprint and the audit stream's counts.
func (s *session) writeStatus() error {
	st := s.status
	st.Fingerprint = s.live.Current().fingerprint
	st.Counters, st.Updated = s.stream.Counts(), time.Now().UTC()
	return writeStatus(s.dir, st)
}

// saveStatus refreshes the status file; a refresh that fails is reported
// once on stderr.
func (s *session) saveStatus() {
	if err := s.writeStatus(); err != nil && !s.statusFailed {
		s.statusFailed = true
		fmt.Fprintf(s.stderr, "sandboxd: status file: %s; sandboxd status shows a stale state\n", policy.OneLine(err.Error()))
	}
}
