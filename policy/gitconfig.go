package policy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A git repository's config can name programs git runs (core.fsmonitor on
// every git status, core.hooksPath's hooks, core.sshCommand on a fetch).
// The sandbox holds the write roots' own .git/config read-only when it
// exists and reports it when it appears; a nested repository's config
// (one the command made with git init, or one that existed) is neither
// held nor refused (git writes it). What the session leaves there is
// reported at exit instead: GitConfigs at start, again at exit, and
// GitConfigRunKeys of each one that appeared or changed.

// gitRunKeys are the git config keys whose value git runs as a program
// (or that bring in another file), lower case; "*" is a subsection.
// alias.* and submodule.*.update run a program only when the value
// starts with "!" (gitRunBang).
var gitRunKeys = []string{
	"core.fsmonitor", "core.hookspath", "core.sshcommand", "core.editor", "core.pager", "core.askpass", "core.gitproxy",
	"credential.helper", "credential.*.helper", "diff.external", "diff.*.textconv", "diff.*.command",
	"filter.*.clean", "filter.*.smudge", "filter.*.process", "merge.*.driver", "gpg.program", "gpg.*.program",
	"sequence.editor", "include.path", "includeif.*.path", "remote.*.uploadpack", "remote.*.receivepack",
	"pager.*", "difftool.*.cmd", "mergetool.*.cmd", "web.browser", "browser.*.cmd", "man.*.cmd",
	"uploadpack.packobjectshook", "alias.*", "submodule.*.update",
}

var gitRunBang = map[string]bool{"alias.*": true, "submodule.*.update": true}

// GitConfigRunKeys returns the keys of a git config file (its text) that
// run a program or include another file (gitRunKeys), each once, as
// section.[subsection.]name with section and name in lower case.
func GitConfigRunKeys(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range gitConfigEntries(data) {
		section, sub := e.section, e.sub
		if i := strings.Index(section, "."); i >= 0 && sub == "" {
			// The old [section.subsection] form.
			section, sub = section[:i], section[i+1:]
		}
		for _, k := range gitRunKeys {
			ks, kn := k[:strings.Index(k, ".")], k[strings.LastIndex(k, ".")+1:]
			withSub := strings.Count(k, ".") == 2
			if ks != section || withSub != (sub != "") || (kn != "*" && kn != e.name) {
				continue
			}
			if gitRunBang[k] && !strings.HasPrefix(e.value, "!") {
				continue
			}
			full := section + "." + e.name
			if sub != "" {
				full = section + "." + sub + "." + e.name
			}
			if !seen[full] {
				seen[full] = true
				out = append(out, full)
			}
		}
	}
	return out
}

// GitConfig is what GitConfigs keeps of one config file: a digest of its
// content and the keys that run a program (GitConfigRunKeys), or that it
// could not be read (not a regular file, larger than maxGitConfig).
type GitConfig struct {
	Sum      [32]byte
	Keys     []string
	Unread   string // why it was not read; "" when it was
	Hook     bool   // a hook git runs (a hooks/ entry not named *.sample), not a config
	existing bool
}

// maxGitConfig bounds the config files read (git's own are a few KiB).
const maxGitConfig = 1 << 20

// maxGitHooks bounds the hooks read in one hooks directory, and the
// directories looked at below one modules/ directory.
const maxGitHooks = 256

// GitConfigs finds the git repositories' configs and hooks below roots:
// each .git directory's and each directory's a .git file names (gitdir:
// ...), with the directories their commondir and modules/ lead to
// (gitDir); at most limit
// entries looked at in all, and not inside .git or node_modules
// directories. complete is false when the walk stopped at the limit, at
// 10 seconds, or at ctx's end. Files are opened without blocking (a FIFO
// there cannot hang the walk) and read only when regular and at most
// maxGitConfig bytes.
func GitConfigs(ctx context.Context, roots []string, limit int) (configs map[string]GitConfig, complete bool) {
	configs = map[string]GitConfig{}
	add := func(p string, hook bool) {
		data, why := readRegular(p, maxGitConfig)
		switch {
		case why == "missing":
		case why != "":
			configs[p] = GitConfig{Sum: sha256.Sum256([]byte(why)), Unread: why, Hook: hook, existing: true}
		case hook:
			configs[p] = GitConfig{Sum: sha256.Sum256(data), Hook: true, existing: true}
		default:
			configs[p] = GitConfig{Sum: sha256.Sum256(data), Keys: GitConfigRunKeys(data), existing: true}
		}
	}
	seen := map[string]bool{}
	var gitDir func(dir string, depth int)
	// gitDir records what git reads from the git directory dir: its
	// config files and the hooks it runs, and, through commondir and
	// modules/, the git directories it reads those from too (a
	// commondir names any directory; a submodule's git directory is
	// modules/NAME, NAME possibly with slashes).
	gitDir = func(dir string, depth int) {
		if depth > 4 || seen[dir] {
			return
		}
		seen[dir] = true
		add(filepath.Join(dir, "config"), false)
		add(filepath.Join(dir, "config.worktree"), false)
		if hooks, err := os.ReadDir(filepath.Join(dir, "hooks")); err == nil {
			for i, h := range hooks {
				if i >= maxGitHooks {
					break
				}
				if !strings.HasSuffix(h.Name(), ".sample") {
					add(filepath.Join(dir, "hooks", h.Name()), true)
				}
			}
		}
		if data, why := readRegular(filepath.Join(dir, "commondir"), 4096); why == "" {
			if c := strings.TrimSpace(string(data)); c != "" {
				if !path.IsAbs(c) {
					c = filepath.Join(dir, c)
				}
				gitDir(filepath.Clean(c), depth+1)
			}
		}
		modules := 0
		filepath.WalkDir(filepath.Join(dir, "modules"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if modules++; modules > maxGitHooks {
				return fs.SkipAll
			}
			if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
				gitDir(p, depth+1)
				return fs.SkipDir
			}
			return nil
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	n := 0
	stop := errors.New("stop")
	complete = true
	for _, r := range roots {
		err := filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; n > limit || (n%256 == 0 && (ctx.Err() != nil || time.Now().After(deadline))) {
				return stop
			}
			switch {
			case d.Name() == ".git" && d.IsDir():
				gitDir(p, 0)
				return fs.SkipDir
			case d.Name() == ".git" && d.Type().IsRegular():
				if dir := gitdirOf(p); dir != "" {
					gitDir(dir, 0)
				}
			case d.IsDir() && p != r && d.Name() == "node_modules":
				return fs.SkipDir
			}
			return nil
		})
		if err == stop {
			complete = false
			break
		}
	}
	return configs, complete
}

// readRegular reads p (following symlinks, as git does) when it is a
// regular file of at most max bytes, opened without blocking; otherwise
// it says why not ("missing" when there is nothing there).
func readRegular(p string, max int64) ([]byte, string) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "missing"
		}
		return nil, "it cannot be opened"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, "it is not a regular file"
	}
	if fi.Size() > max {
		return nil, fmt.Sprintf("it is larger than %d bytes", max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(data)) > max {
		return nil, "it cannot be read whole"
	}
	return data, ""
}

// gitdirOf reads a .git file's "gitdir: DIR" (relative to the file's
// directory), or "".
func gitdirOf(p string) string {
	data, why := readRegular(p, 4096)
	if why != "" {
		return ""
	}
	line, _, _ := strings.Cut(string(data), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !path.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(p), dir)
	}
	return filepath.Clean(dir)
}

// GitConfigReport says, for the config p that appeared or changed during
// the session (after[p] differs from before[p]) and names programs git
// runs, or could not be read, what the exit report says; "" otherwise.
func GitConfigReport(p string, before, after map[string]GitConfig) string {
	now, ok := after[p]
	if !ok {
		return ""
	}
	old := before[p]
	if old.existing && old.Sum == now.Sum {
		return ""
	}
	how := "changed"
	if !old.existing {
		how = "appeared"
	}
	switch {
	case now.Hook:
		return fmt.Sprintf("%s %s during the session: a git hook, which git runs on the host; review it before running git there outside the sandbox", p, how)
	case now.Unread != "":
		return fmt.Sprintf("%s %s during the session and was not checked (%s); review it before running git there outside the sandbox", p, how, now.Unread)
	case len(now.Keys) > 0:
		return fmt.Sprintf("%s %s during the session and sets %s (git runs these as programs, or includes other files, on the host); review it before running git there outside the sandbox", p, how, strings.Join(now.Keys, ", "))
	}
	return ""
}
