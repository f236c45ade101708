package shell

import (
	"slices"
	"strings"
	"sync"
)

// FileWriteFinding says that a command line writes a file.
type FileWriteFinding struct {
	// Path is the file written, when the command's shape reveals it
	// (empty otherwise).
	Path string
	// Reason is a short description safe to show an agent, such as
	// "sed -i" or "> out.txt".
	Reason string
}

// ClassifyFileWrite reports the file write the line performs, or nil when
// it performs none. When the line writes several different files, or one
// whose name is not static, Path is empty and Reason lists the writes, so a
// caller checking Path against file rules cannot miss one. A line that
// cannot be classified is reported as a possible write with an empty Path
// (fail closed). It never panics and is safe for concurrent use.
func ClassifyFileWrite(line string) *FileWriteFinding {
	return Classify(line).FileWrite()
}

// FileWrite is ClassifyFileWrite for a line already classified.
func (c Classification) FileWrite() *FileWriteFinding {
	if c.Unparseable {
		return &FileWriteFinding{Reason: "command line could not be classified: " + c.Reason}
	}
	if len(c.writes) == 0 {
		return nil
	}
	f := c.writes[0]
	var reasons []string
	for _, w := range c.writes {
		if w.Path != f.Path || w.Path == "" {
			f.Path = ""
		}
		if !slices.Contains(reasons, w.Reason) {
			reasons = append(reasons, w.Reason)
		}
	}
	if len(reasons) > 1 {
		if len(reasons) > 5 {
			reasons = append(reasons[:5], "...")
		}
		f.Reason = strings.Join(reasons, ", ")
		if f.Path == "" {
			f.Reason = "writes several files: " + f.Reason
		}
	}
	return &f
}

// writeOperands returns the words commandWrites takes for operands: every
// word after the program that does not start with "-" (and "-" itself).
func writeOperands(args []word) []word {
	var ops []word
	for _, w := range args[1:] {
		if !strings.HasPrefix(w.val, "-") || w.val == "-" {
			ops = append(ops, w)
		}
	}
	return ops
}

// writers whose operands are all written (path = first operand).
var writeAll = sync.OnceValue(func() map[string]bool {
	return setOf(`touch mkdir rm rmdir unlink shred mkfifo mknod gzip gunzip bzip2 xz unxz zstd`)
})

// writers whose first operand is not a path (mode, owner, size...).
var writeAfterFirst = sync.OnceValue(func() map[string]bool {
	return setOf(`chmod chown chgrp`)
})

// writers whose last operand is the destination.
var writeLast = sync.OnceValue(func() map[string]bool {
	return setOf(`cp mv install ln`)
})

// commandWrites records writes made by a command's own semantics.
func (a *analyzer) commandWrites(inv invocation) {
	if p := programs()[inv.prog]; p != nil {
		if p.writes != nil {
			p.writes(a, inv)
		}
		return
	}
	prog, args := inv.prog, inv.args
	ops := writeOperands(args)
	first := func() string {
		if len(ops) > 0 {
			return ops[0].val
		}
		return ""
	}
	switch {
	case writeAll()[prog]:
		if len(ops) > 0 {
			a.write(first(), prog)
		}
	case writeAfterFirst()[prog]:
		if len(ops) > 1 {
			a.write(ops[1].val, prog)
		}
	case writeLast()[prog] && targetDir(args) != nil:
		// "cp -t /dir a": the destination is -t's value, not the last word.
		a.write(targetDir(args).val, prog+" -t")
	case writeLast()[prog]:
		if len(ops) > 1 {
			dst := ops[len(ops)-1].val
			a.write(dst, prog)
			if prog == "cp" || prog == "ln" || prog == "install" || prog == "mv" {
				a.noteCopy(ops[0], ops[len(ops)-1])
			}
		}
	case prog == "truncate":
		o := scanOpts(args, 1, optSpec{short: "sr", long: []string{"size", "reference"}})
		if o.next < len(args) {
			a.write(args[o.next].val, "truncate")
		}
	case prog == "tee":
		for _, w := range ops {
			if !harmlessSink(w.val) {
				a.write(w.val, "tee")
				return
			}
		}
	case prog == "dd":
		for _, w := range args[1:] {
			if v, ok := strings.CutPrefix(w.val, "of="); ok && !harmlessSink(v) {
				a.write(v, "dd of=")
			}
		}
	case prog == "patch":
		for _, w := range args[1:] {
			if w.val == "--dry-run" {
				return
			}
		}
		a.write(first(), "patch")
	case prog == "unzip":
		for _, w := range args[1:] {
			if w.val == "-l" || w.val == "-t" || w.val == "-Z" || w.val == "-p" {
				return
			}
		}
		a.write(first(), "unzip")
	case prog == "uniq":
		// uniq INPUT OUTPUT writes OUTPUT.
		if o := scanAll(args, 1, optSpec{short: "fsw", long: []string{"skip-fields", "skip-chars", "check-chars", "group", "all-repeated"}}); len(o.ops) > 1 && o.ops[1].val != "-" {
			a.write(o.ops[1].val, "uniq OUTPUT")
		}
	case prog == "sponge":
		if len(ops) > 0 {
			a.write(first(), "sponge")
		}
	case prog == "split" || prog == "csplit":
		a.write("", prog+" writes pieces") // files named from a prefix
	case prog == "zip" || prog == "7z" || prog == "7za" || prog == "rar" || prog == "ar":
		if len(ops) > 0 {
			a.write("", prog) // 7z/rar/ar: the archive follows a subcommand letter
		}
	}
}

var reWhich = &lazyRegexp{pattern: "^(\\$\\(|`)\\s*(which|command\\s+-v|type\\s+-P|whereis)\\s+([A-Za-z0-9._+-]+)\\s*(\\)|`)$"}

// noteCopy remembers that dst is a copy or link of src's program, so a
// later "./dst ARGS" in the line is analysed as the original program too.
// src may be a path in a bin/ directory or $(which NAME) / $(command -v NAME).
func (a *analyzer) noteCopy(src, dst word) {
	name := src.val
	if src.dyn {
		m := reWhich.FindStringSubmatch(src.val)
		if m == nil {
			return
		}
		name = m[3]
	} else if !strings.Contains(name, "bin/") {
		return // not an installed program: a data file, not a renamed binary
	}
	orig, _ := normalizeProgram(name)
	target := dst.val
	if dst.dyn {
		return
	}
	if strings.HasSuffix(target, "/") || target == "." || target == ".." {
		target = name
	}
	copyName, _ := normalizeProgram(target)
	if orig == "" || copyName == "" || orig == copyName {
		return
	}
	if a.copies == nil {
		a.copies = map[string]string{}
	}
	a.copies[copyName] = orig
}

// targetDir returns the value of cp/mv/install/ln -t DIR,
// --target-directory DIR or --target-directory=DIR, or nil.
func targetDir(args []word) *word {
	for j := 1; j < len(args); j++ {
		v := args[j].val
		switch {
		case v == "--":
			return nil
		case v == "-t" || v == "--target-directory":
			if j+1 < len(args) {
				return &args[j+1]
			}
		case strings.HasPrefix(v, "--target-directory="):
			w := staticWord(strings.TrimPrefix(v, "--target-directory="))
			return &w
		case strings.HasPrefix(v, "-t") && !strings.HasPrefix(v, "--"):
			w := staticWord(v[2:])
			return &w
		}
	}
	return nil
}
