package shell

import (
	"errors"
	"fmt"
	"strings"
)

// maxPatchFiles caps the files one patch may name.
const maxPatchFiles = 1000

// PatchPaths returns every path a Codex apply_patch text adds, updates,
// deletes or moves to, in order, as written (relative paths are relative to
// the call's cwd). The text must hold one "*** Begin Patch" …
// "*** End Patch" envelope, optionally after an "apply_patch" heredoc line;
// a patch with no file header, an empty path or an unknown "*** " header is
// an error, which Decide (and hookgate's engine) turns into a deny. It is
// safe for concurrent use.
func PatchPaths(text string) ([]string, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "*** Begin Patch" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, errors.New("apply_patch: no \"*** Begin Patch\" line")
	}
	if start > 0 {
		head := strings.TrimSpace(strings.Join(lines[:start], "\n"))
		if !strings.HasPrefix(head, "apply_patch") || strings.Contains(head, "\n") {
			return nil, errors.New("apply_patch: text before \"*** Begin Patch\"")
		}
	}
	var paths []string
	ended := false
	for _, l := range lines[start+1:] {
		if ended {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "EOF") && t != "'EOF'" {
				return nil, errors.New("apply_patch: text after \"*** End Patch\"")
			}
			continue
		}
		// Codex trims a hunk header before reading it, so " *** Add
		// File: .env" after an Add hunk's last "+" line is a header too.
		padded := l
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "*** ") {
			continue
		}
		if l == "*** End Patch" {
			ended = true
			continue
		}
		if l == "*** End of File" {
			continue
		}
		var p string
		switch {
		case strings.HasPrefix(l, "*** Add File:"):
			p = strings.TrimPrefix(l, "*** Add File:")
		case strings.HasPrefix(l, "*** Update File:"):
			p = strings.TrimPrefix(l, "*** Update File:")
		case strings.HasPrefix(l, "*** Delete File:"):
			p = strings.TrimPrefix(l, "*** Delete File:")
		case strings.HasPrefix(l, "*** Move to:"):
			p = strings.TrimPrefix(l, "*** Move to:")
		case padded != l:
			// A padded line that is no header is a context line of an
			// Update hunk (" *** note").
			continue
		default:
			return nil, fmt.Errorf("apply_patch: unknown header %q", clip(l))
		}
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New("apply_patch: empty path in a file header")
		}
		if strings.ContainsAny(p, "\x00") {
			return nil, errors.New("apply_patch: NUL in a path")
		}
		paths = append(paths, p)
		if len(paths) > maxPatchFiles {
			return nil, fmt.Errorf("apply_patch: more than %d files", maxPatchFiles)
		}
	}
	if !ended {
		return nil, errors.New("apply_patch: no \"*** End Patch\" line")
	}
	if len(paths) == 0 {
		return nil, errors.New("apply_patch: no file header")
	}
	return paths, nil
}

// clip shortens a field quoted in a reason to 80 bytes.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
