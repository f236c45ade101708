package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// fileKey is a file's identity: its device and inode.
type fileKey struct{ dev, ino uint64 }

// HiddenLinkScanLimit bounds the entries of the hidden trees the search
// for other names walks (at most the scan limit): a policy may hide a
// large directory (~/.cache), which before cost one lookup, and each
// regular file there costs an lstat at every start (a hidden ~/go of
// 10,699 entries: 36-39 ms, docs/benchmarks.md). Past it the start line
// says what was not looked at.
const HiddenLinkScanLimit = 20000

// linkedFile is a hidden regular file with more than one name (hard
// link): every name of it the plan found.
type linkedFile struct {
	path  string // the name the plan hides it by
	nlink uint64
	names map[string]bool
}

// missing is how many of its names the plan did not find.
func (l *linkedFile) missing() uint64 {
	if n := uint64(len(l.names)); n < l.nlink {
		return l.nlink - n
	}
	return 0
}

// hideLinks finds the other names (hard links) of the hidden files, so
// that they are hidden too: the mount layer masks a path, not a file, and
// a hard link in the workspace to ~/.ssh/id_ed25519 would read it. In
// order:
//
//  1. the hidden trees (hidden) are walked for regular files with more
//     than one name, at most HiddenLinkScanLimit entries (and limit; past
//     that, the rest is reported in NotCovered); directories cannot be
//     hard-linked;
//  2. only when one is found with names outside the hidden trees, the
//     workspace and the write roots (what the sandbox shows writable, and
//     what the files.deny scan walks) are walked whole, .git and
//     node_modules too, for the other names, at most limit entries,
//     stopping once every name is found;
//  3. a hidden file some of whose names were not found (elsewhere on the
//     host, or past the limit) goes into NotCovered with its counts.
//
// It returns the names to hide. Once ctx is done it stops with its error.
func (p *FSPlan) hideLinks(ctx context.Context, hidden []string, limit int) ([]string, error) {
	linked := map[fileKey]*linkedFile{}
	p.hiddenIDs = map[fileKey]string{}
	stop := errors.New("stop")
	inHidden := map[string]bool{}
	walked := 0
	truncated := ""
	hiddenLimit := min(limit, HiddenLinkScanLimit)
	roots := dedupe(hidden)
	for _, h := range roots {
		inHidden[h] = true
	}
	for _, h := range roots {
		if truncated != "" {
			break
		}
		err := filepath.WalkDir(h, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: the sandbox cannot read it either
			}
			if path != h && inHidden[path] {
				return skip(d) // walked as its own root
			}
			if walked++; walked%256 == 0 && ctx.Err() != nil {
				return fmt.Errorf("files.deny: the search for other names of hidden files stopped: %w", context.Cause(ctx))
			}
			if walked > hiddenLimit {
				truncated = h
				return stop
			}
			id, nlink, ok := regularIdentity(d)
			if !ok {
				return nil
			}
			// Every hidden regular file, for the open gate: a hard link
			// the host makes during the session is refused by identity.
			if _, seen := p.hiddenIDs[id]; !seen {
				p.hiddenIDs[id] = path
			}
			if nlink < 2 {
				return nil
			}
			l := linked[id]
			if l == nil {
				l = &linkedFile{path: path, nlink: nlink, names: map[string]bool{}}
				linked[id] = l
			}
			l.names[path] = true
			return nil
		})
		if err != nil && err != stop {
			return nil, err
		}
	}
	p.linked = linked
	p.LinkScanned = walked
	if truncated != "" {
		p.NotCovered = append(p.NotCovered, fmt.Sprintf("%s: the hidden paths hold more than %d entries (stopped in %s); other names (hard links) of the files past that are not hidden by the kernel", p.ruleOf(truncated), hiddenLimit, truncated))
	}
	left := uint64(0)
	for _, l := range linked {
		left += l.missing()
	}

	var found []string
	where := "the hidden paths"
	if left > 0 {
		where = "the hidden paths, the workspace and the write roots"
		var shown []string
		for _, r := range dedupe(append([]string{p.Workspace}, p.WriteRoots...)) {
			outer := false
			for _, o := range shown {
				if under(r, o) {
					outer = true
				}
			}
			for _, h := range roots {
				if under(r, h) {
					outer = true
				}
			}
			if !outer {
				shown = append(shown, r)
			}
		}
		count := 0
		for _, r := range shown {
			err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if inHidden[path] {
					return skip(d) // walked above
				}
				if count++; count%256 == 0 && ctx.Err() != nil {
					return fmt.Errorf("files.deny: the search for other names of hidden files stopped: %w", context.Cause(ctx))
				}
				if count > limit {
					where += fmt.Sprintf(" (the search stopped at %d entries)", limit)
					return stop
				}
				id, _, ok := regularIdentity(d)
				l := linked[id]
				if !ok || l == nil || l.names[path] {
					return nil
				}
				l.names[path] = true
				found = append(found, path)
				if p.links == nil {
					p.links = map[string]string{}
				}
				p.links[path] = l.path
				if left--; left == 0 {
					return stop
				}
				return nil
			})
			if err == stop {
				break
			}
			if err != nil {
				return nil, err
			}
		}
		p.LinkScanned += count
	}
	var notes []string
	for _, l := range linked {
		if n := l.missing(); n > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s has %d names (hard links) and %d of them were found in %s; the other %d, elsewhere, are not hidden by the kernel", p.ruleOf(l.path), l.path, l.nlink, len(l.names), where, n))
		}
	}
	sort.Strings(notes)
	p.NotCovered = append(p.NotCovered, notes...)
	sort.Strings(found)
	return found, nil
}

// skip is what a walk returns to pass over d (and what is below it).
func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// hiddenBy is what hides path: a credential's file (cred), or the
// files.deny pattern pat (a match, or a write root it denies).
func (p *FSPlan) hiddenBy(path string) (pat string, cred bool) {
	for _, h := range p.hide {
		if under(path, h) {
			return "", true
		}
	}
	if p.files != nil {
		if pat := p.matcher.Denied(path, p.files.Deny); pat != "" {
			return pat, false
		}
	}
	for r, pat := range p.denyWrite {
		if under(path, r) {
			return pat, false
		}
	}
	return "", false
}

// ruleOf names the rule that hides path, as NotCovered's entries start.
func (p *FSPlan) ruleOf(path string) string {
	if pat, cred := p.hiddenBy(path); cred {
		return RuleCredentialFile
	} else if pat != "" {
		return fmt.Sprintf("files.deny %q", pat)
	}
	return RuleFilesDeny
}

// linkOf is the hidden file that path is another name (hard link) of, and
// whether the plan found (and hides) that name: ("", false) for a path
// that is no other name of a hidden file.
func (p *FSPlan) linkOf(path string) (of string, hidden bool) {
	if of, ok := p.links[path]; ok {
		return of, true
	}
	if len(p.linked) == 0 {
		return "", false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	id, _, ok := fileIdentity(fi)
	if l := p.linked[id]; ok && l != nil && !l.names[path] {
		return l.path, false
	}
	return "", false
}

// regularIdentity is a walked regular file's identity and link count
// (not ok for anything else, or one that cannot be looked at).
func regularIdentity(d fs.DirEntry) (fileKey, uint64, bool) {
	if !d.Type().IsRegular() {
		return fileKey{}, 0, false
	}
	fi, err := d.Info()
	if err != nil {
		return fileKey{}, 0, false
	}
	return fileIdentity(fi)
}
