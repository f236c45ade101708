package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// VerifyArgs say which installation to check.
type VerifyArgs struct {
	InstallArgs
	// Codex is the codex binary asked through its app-server (hooks/list);
	// "" checks Codex's files alone.
	Codex string
}

// Verify checks that the harness will really run hookgate on its tool
// calls, from what the harness itself reads: the configuration file and
// the hookgate entry in it (first in line for each gated event, its
// binary executable, the fail-closed wrapper around it), the settings that
// would switch it off (Claude Code's disableAllHooks), and for Codex the
// trust Codex records (asked from Codex's app-server when a codex binary
// is given, else recomputed). It returns the configuration file and nil,
// or the first problem as an error.
func Verify(ctx context.Context, a VerifyArgs) (string, error) {
	path, err := ConfigPath(a.InstallArgs)
	if err != nil {
		return "", err
	}
	p := mustProtocol(a.Harness)
	if p.install.verifyFile != nil {
		return path, p.install.verifyFile(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return path, fmt.Errorf("%s: %w: hookgate is not installed there", path, err)
	}
	v, err := parseOrdered(data)
	root, _ := v.(*object)
	if err != nil || root == nil {
		return path, fmt.Errorf("%s: not a JSON object (%v): the harness would not load it", path, err)
	}
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	if hooksObj == nil {
		return path, fmt.Errorf("%s: no hooks", path)
	}
	for _, ev := range p.install.events {
		cmd, matcher, err := firstHandler(p.install.flat, hooksObj, ev)
		if err != nil {
			return path, fmt.Errorf("%s: %s: %w", path, ev, err)
		}
		w, _ := shellWords(cmd)
		if len(w) < 5 || unwrap(w)[0] == w[0] {
			return path, fmt.Errorf("%s: %s: hookgate runs without the fail-closed wrapper (reinstall: a crash or a hang would let the tool run)", path, ev)
		}
		inner := unwrap(w)
		if cmd != wrappedCommand(a.Harness, inner) {
			return path, fmt.Errorf("%s: %s: hookgate's hook command is not the one install writes (its wrapper was changed); reinstall", path, ev)
		}
		if want := p.install.matcher; !p.install.flat && matcher != want {
			return path, fmt.Errorf("%s: %s: hookgate's entry matches %q, not every tool (%q); reinstall", path, ev, matcher, want)
		}
		if err := runsHookgate(ctx, inner[0]); err != nil {
			return path, fmt.Errorf("%s: %s: %w (every call would be denied)", path, ev, err)
		}
	}
	if p.install.verify != nil {
		return path, p.install.verify(ctx, a, path, data)
	}
	return path, nil
}

// runsHookgate checks that bin is an executable hookgate ("hookgate
// version" answers as hookgate does).
func runsHookgate(ctx context.Context, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "hookgate ") {
		return fmt.Errorf("%s does not run as hookgate (%v)", bin, err)
	}
	return nil
}

// firstHandler returns the command (and its group's matcher) of the first
// handler for event ev: it must be hookgate's (a handler before it could
// answer first and allow).
func firstHandler(flat bool, hooksObj *object, ev string) (string, string, error) {
	list, _ := hooksObj.vals[ev].([]any)
	for _, item := range list {
		o, _ := item.(*object)
		if o == nil {
			continue
		}
		handlers := []any{o}
		if hs, ok := o.vals["hooks"].([]any); ok && !flat {
			handlers = hs
		}
		matcher, _ := o.vals["matcher"].(string)
		for _, hd := range handlers {
			ho, _ := hd.(*object)
			if ho == nil {
				continue
			}
			cmd, _ := ho.vals["command"].(string)
			if isOurs(cmd) {
				return cmd, matcher, nil
			}
			return "", "", fmt.Errorf("another hook (%q) runs before hookgate", clipCommand(cmd))
		}
	}
	return "", "", errors.New("no hookgate entry")
}

func clipCommand(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
