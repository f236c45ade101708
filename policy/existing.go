package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ExistingScanLimit bounds the walk for the protected names that exist
// below the write roots' tops at start (findExisting): entries looked at,
// over all the roots.
const ExistingScanLimit = 100000

// existingScanTime bounds the same walk in time.
const existingScanTime = 3 * time.Second

// findExisting walks the workspace and the write roots (not into scanSkip
// directories, nor hidden ones, nor through symlinks) for the paths that
// are a protected name or below one (plantName; not those AllowEdit frees,
// nor the top-level ones, which are read-only binds) and keeps them in
// p.existingPlants, sorted: CreateGuard.Existing. Past limit entries or
// existingScanTime, the walk stops and NotCovered says that a protected
// name it did not reach is refused when a tool removes it and creates it
// again (the file is lost); with / a write root it does not walk and
// says so. Once ctx is done it returns ctx's error.
func (p *FSPlan) findExisting(ctx context.Context, limit int) error {
	if p.AllWritable {
		// "/" is no tree to walk at every start.
		p.NotCovered = append(p.NotCovered, "filesystem.protected: with / a write root, the protected names that exist below the write roots' tops are not looked for; one that a tool removes and creates again (git checkout, tar x) is refused, and lost")
		return nil
	}
	var roots []string
	for _, r := range append([]string{p.Workspace}, p.WriteRoots...) {
		if _, denied := p.denyWrite[r]; !denied && !hasPath(roots, r) {
			roots = append(roots, r)
		}
	}
	// Outermost only: a write root inside the workspace is walked once.
	var outer []string
	for _, r := range roots {
		inside := false
		for _, o := range roots {
			if o != r && under(r, o) {
				inside = true
			}
		}
		if !inside {
			outer = append(outer, r)
		}
	}
	deadline := time.Now().Add(existingScanTime)
	stop := errors.New("stop")
	n := 0
	for _, r := range outer {
		err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: the command cannot remove it either
			}
			if n++; n > limit || n%256 == 0 && time.Now().After(deadline) {
				return stop
			}
			if n%256 == 0 && ctx.Err() != nil {
				return fmt.Errorf("filesystem: the walk for existing protected names stopped: %w", context.Cause(ctx))
			}
			if path != r && d.IsDir() && (scanSkip[d.Name()] || hasPath(p.Hidden, path)) {
				return fs.SkipDir
			}
			// Every protected name has a component that starts with a
			// dot: a path with none is not one (most of a tree).
			if !strings.Contains(path[len(r):], "/.") {
				return nil
			}
			if e := plantName(path); e != "" && !slices.Contains(p.allowEdit, e) && !p.topProtected(path) {
				p.existingPlants = append(p.existingPlants, path)
			}
			return nil
		})
		if err == stop {
			p.NotCovered = append(p.NotCovered, fmt.Sprintf("filesystem.protected: the protected names that exist below the write roots' tops were looked for in the first %d entries (%s was not walked whole); one not reached that a tool removes and creates again (git checkout, tar x) is refused, and lost", min(n-1, limit), r))
			break
		}
		if err != nil {
			return err
		}
	}
	slices.Sort(p.existingPlants)
	p.existingPlants = slices.Compact(p.existingPlants)
	return nil
}

// topProtected says whether path is, or is below, a protected path of
// the plan (bound read-only: it cannot be removed to be made again).
func (p *FSPlan) topProtected(path string) bool {
	for _, pr := range p.Protected {
		if under(path, pr) {
			return true
		}
	}
	return false
}
