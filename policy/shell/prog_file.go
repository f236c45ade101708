package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The file family: programs that read and write files and have an option
// that runs a command (sort --compress-program, rg --pre, tar -I and
// --to-command).
func filePrograms() map[string]*program {
	return map[string]*program{
		"sort": {run: sortRun}, "rg": {run: rgRun}, "tar": {run: tarRun},
	}
}

// sortRun reads the program sort --compress-program runs and the file -o
// writes.
func sortRun(a *analyzer, inv invocation, _ stdin, depth int) {
	args := inv.args
	a.record(inv)
	o := scanOpts(args, 1, optSpec{short: "kotTS", long: []string{"key", "output", "field-separator", "temporary-directory", "buffer-size", "parallel", "files0-from", "random-source", "batch-size"}, strLong: []string{"compress-program"}})
	for _, s := range o.strs {
		a.command([]word{s}, stdin{}, depth+1)
	}
	if v, ok := o.val("-o", "--output"); ok {
		a.write(v.val, "sort -o")
	}
}

// rgRun reads the program rg --pre runs on each file it searches.
func rgRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	o := scanOpts(inv.args, 1, optSpec{short: "ABCefgjmMtTE", long: []string{"glob", "type", "type-not", "max-count", "context", "after-context", "before-context", "regexp", "file", "max-depth", "encoding", "pre-glob", "sort", "sortr", "replace", "threads"}, strLong: []string{"pre"}})
	for _, s := range o.strs {
		a.command([]word{s}, stdin{}, depth+1)
	}
}

// tarRun reads tar's options that run commands (-I, --to-command,
// --checkpoint-action=exec…) and the files it writes: the archive it
// creates, the directory it extracts into.
func tarRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	args := inv.args
	extract := false
	if len(args) > 1 && !strings.HasPrefix(args[1].val, "-") && strings.ContainsAny(args[1].val, "x") {
		extract = true
	}
	o := scanOpts(args, 1, optSpec{short: "fCIbHKLNgTVX", long: []string{"file", "directory", "use-compress-program", "files-from", "exclude-from", "format", "owner", "group", "mode", "transform", "newer", "after-date"}, strLong: []string{"to-command", "checkpoint-action", "info-script", "new-volume-script", "rsh-command"}})
	if o.has("-x", "--extract", "--get") {
		extract = true
	}
	if tarCreates(args) {
		// tar -c/-r/-u/-A writes the archive named by -f (stdout for -).
		if f, ok := o.val("-f", "--file"); ok && !f.dyn && f.val != "-" && strings.HasPrefix(args[1].val, "-") {
			a.write(f.val, "tar -c")
		} else if !ok || f.val != "-" {
			a.write("", "tar -c")
		}
	}
	for _, s := range o.strs {
		v := s
		if strings.HasPrefix(v.val, "exec=") {
			v.val = strings.TrimPrefix(v.val, "exec=")
		} else if !strings.HasPrefix(s.val, "exec") && strings.Contains(s.val, "=") {
			continue
		}
		a.codeString("tar command option", v, syntax.LangBash, depth)
	}
	if v, ok := o.val("-I", "--use-compress-program"); ok {
		a.codeString("tar -I", v, syntax.LangBash, depth)
	}
	if extract {
		dir := ""
		if v, ok := o.val("-C", "--directory"); ok {
			dir = v.val
		}
		a.write(dir, "tar -x")
	}
}

// tarCreates reports tar's -c/-r/-u/-A modes (also old-style "tar cf"),
// which write the archive.
func tarCreates(args []word) bool {
	for j := 1; j < len(args); j++ {
		v := args[j].val
		cluster := ""
		switch {
		case v == "--":
			return false
		case strings.HasPrefix(v, "--"):
			switch strings.SplitN(v, "=", 2)[0] {
			case "--create", "--append", "--update", "--concatenate", "--catenate":
				return true
			}
		case strings.HasPrefix(v, "-"):
			cluster = v[1:]
		case j == 1:
			cluster = v // old style: tar cf out.tar d
		}
		for _, c := range cluster {
			if strings.ContainsRune("fCTXbgKLNV", c) {
				break // the rest is this option's value
			}
			if strings.ContainsRune("cruA", c) {
				return true
			}
		}
	}
	return false
}
