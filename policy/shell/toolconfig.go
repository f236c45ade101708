package shell

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// configFile is a file a program reads its registry or proxy from (a
// program's configs): name is relative to a directory (".npmrc",
// ".cargo/config.toml") or to the home directory ("~/.npmrc").
type configFile struct {
	name string
	// up: the program looks for name in its working directory and every
	// directory above it (npm's project, cargo's configuration).
	up bool
	// redirects reports whether the file's content may send the program to
	// hosts its hosts answer does not name; nil: its existence does.
	redirects func(content string) bool
}

// maxConfigBytes bounds how much of a configuration file is read; a larger
// one is taken to redirect.
const maxConfigBytes = 256 << 10

// anyWord is a configFile.redirects that holds when the content, read
// without regard to case, holds any of the words.
func anyWord(words ...string) func(string) bool {
	return func(content string) bool {
		content = strings.ToLower(content)
		for _, w := range words {
			if strings.Contains(content, w) {
				return true
			}
		}
		return false
	}
}

// configRedirect says why a program the line runs may go to hosts its
// hosts answer does not name, by its configuration ("" when none): for each invocation that performs network actions, its entry's
// configs are looked for in each directory the program may run in
// (lineDirs: cwd and the directories the line changes to) and, for those
// that say up, in every directory above it; "~/" ones in home. A file
// that cannot be read, or is too large, counts as redirecting (fail
// closed); a missing one does not. So does a directory the line changes
// to that is not static.
func configRedirect(c Classification, cwd, home string) string {
	var dirs []string
	for _, inv := range c.invs {
		p := programs()[inv.prog]
		if p == nil || len(p.configs) == 0 || !fetches(inv) {
			continue
		}
		if dirs == nil {
			var why string
			if dirs, why = lineDirs(c, cwd, home); why != "" {
				return "runs " + inv.prog + " after " + why + ", whose configuration files the gate cannot look for"
			}
		}
		for _, cf := range p.configs {
			var paths []string
			if rel, ok := strings.CutPrefix(cf.name, "~/"); ok {
				if home != "" {
					paths = append(paths, filepath.Join(home, rel))
				}
			} else {
				for _, d := range dirs {
					for {
						paths = append(paths, filepath.Join(d, cf.name))
						up := filepath.Dir(d)
						if !cf.up || up == d {
							break
						}
						d = up
					}
				}
			}
			for _, path := range paths {
				if configRedirects(path, cf.redirects) {
					return "runs " + inv.prog + ", and " + path + " may send it to hosts the line does not name (the gate does not read tools' configuration)"
				}
			}
		}
	}
	return ""
}

// configRedirects reads one configuration file (see configRedirect).
func configRedirects(path string, redirects func(string) bool) bool {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false
	}
	if err != nil {
		return true
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		return err != nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil || len(b) > maxConfigBytes {
		return true
	}
	return redirects == nil || redirects(string(b))
}

// lineDirs returns the directories the line's programs may run in: cwd,
// and each directory a cd or pushd of the line, or a package manager's
// directory option (-C, --prefix, --dir, --cwd, --directory, --project),
// changes to, taken from cwd and from the directory before it (a line's
// order is not always its run order, so both). why says a directory that
// cannot be read (a dynamic argument, "cd -").
func lineDirs(c Classification, cwd, home string) (dirs []string, why string) {
	dirs = []string{cwd}
	cur := cwd
	add := func(to string) {
		if strings.HasPrefix(to, "~") {
			to = home + to[1:]
		}
		if !filepath.IsAbs(to) {
			dirs = append(dirs, filepath.Join(cwd, to))
			to = filepath.Join(cur, to)
		}
		to = filepath.Clean(to)
		dirs = append(dirs, to)
		cur = to
	}
	for _, inv := range c.invs {
		args := inv.args
		switch inv.prog {
		case "cd", "pushd":
			ops := operands(args, optSpec{})
			switch {
			case len(ops) == 0:
				add(home)
			case ops[0].dyn || ops[0].val == "-" || strings.HasPrefix(ops[0].val, "+"):
				return nil, inv.prog + " to a directory the line does not name"
			default:
				add(ops[0].val)
			}
			continue
		}
		if p := programs()[inv.prog]; p == nil || len(p.configs) == 0 {
			continue
		}
		for i := 1; i < len(args); i++ {
			v := args[i].val
			name, val, inline := strings.Cut(v, "=")
			switch name {
			case "-C", "--prefix", "--dir", "--cwd", "--directory", "--project", "--manifest-path", "--gemfile":
			default:
				continue
			}
			if !inline {
				if i+1 >= len(args) {
					break
				}
				i++
				val = args[i].val
				if args[i].dyn {
					return nil, inv.prog + " " + name + " names a directory that is not static"
				}
			} else if args[i].dyn {
				return nil, inv.prog + " " + name + " names a directory that is not static"
			}
			if name == "--manifest-path" || name == "--gemfile" {
				val = filepath.Dir(val)
			}
			add(val)
		}
	}
	return dirs, ""
}
