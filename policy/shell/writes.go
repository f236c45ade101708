package shell

import (
	"slices"
	"strings"
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

// commandWrites records the writes a command makes by its own semantics:
// its registry entry's writes answer (a program with no entry writes
// nothing itself).
func (a *analyzer) commandWrites(inv invocation) {
	if p := programs()[inv.prog]; p != nil && p.writes != nil {
		p.writes(a, inv)
	}
}

// reWhich matches a substitution that names an installed program:
// $(which NAME), $(command -v NAME), $(type -P NAME), $(whereis NAME).
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
