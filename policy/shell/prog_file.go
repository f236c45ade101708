package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The file family: programs that write files. Most are read generically
// (nil run) and write what their operands name; sort, rg and tar also
// have an option that runs a command (sort --compress-program, rg --pre,
// tar -I and --to-command). nonExec is set where the generic tables had
// it, so the generic reading tries the operands of the others as commands.
func filePrograms() map[string]*program {
	first, firstNE := &program{writes: firstOperandWrites}, &program{writes: firstOperandWrites, nonExec: true}
	second, secondNE := &program{writes: secondOperandWrites}, &program{writes: secondOperandWrites, nonExec: true}
	dest, destNE := &program{writes: destinationWrites}, &program{writes: destinationWrites, nonExec: true}
	pieces := &program{writes: piecesWrites}
	archive := &program{writes: archiveWrites}
	return map[string]*program{
		"sort": {run: sortRun}, "rg": {run: rgRun}, "tar": {run: tarRun},

		// Their first operand is written (rm's every operand is: the first
		// names the write).
		"touch": firstNE, "mkdir": firstNE, "rm": firstNE, "rmdir": firstNE, "gzip": firstNE, "gunzip": firstNE,
		"unlink": first, "shred": first, "mkfifo": first, "mknod": first, "bzip2": first, "xz": first,
		"unxz": first, "zstd": first, "sponge": first,
		// Their first operand is a mode or an owner, the second is written.
		"chmod": secondNE, "chown": secondNE, "chgrp": second,
		// The last operand, or -t's directory, is the destination.
		"cp": destNE, "mv": destNE, "ln": destNE, "install": dest,

		"truncate": {writes: truncateWrites}, "tee": {writes: teeWrites, nonExec: true}, "dd": {writes: ddWrites},
		"patch": {writes: patchWrites}, "unzip": {writes: unzipWrites, nonExec: true},
		"uniq": {writes: uniqWrites, nonExec: true}, "split": pieces, "csplit": pieces,
		"zip": {writes: archiveWrites, nonExec: true}, "7z": archive, "7za": archive, "rar": archive, "ar": archive,
	}
}

// firstWriteOperand returns the first of writeOperands(args), "" when
// there is none.
func firstWriteOperand(args []word) string {
	if ops := writeOperands(args); len(ops) > 0 {
		return ops[0].val
	}
	return ""
}

// firstOperandWrites records the first operand as the file written.
func firstOperandWrites(a *analyzer, inv invocation) {
	if ops := writeOperands(inv.args); len(ops) > 0 {
		a.write(ops[0].val, inv.prog)
	}
}

// secondOperandWrites records the second operand as the file written (the
// first is chmod's mode, chown's owner).
func secondOperandWrites(a *analyzer, inv invocation) {
	if ops := writeOperands(inv.args); len(ops) > 1 {
		a.write(ops[1].val, inv.prog)
	}
}

// destinationWrites records the destination cp, mv, install and ln write,
// and notes a copy of a program (analyzer.noteCopy).
func destinationWrites(a *analyzer, inv invocation) {
	if t := targetDir(inv.args); t != nil {
		// "cp -t /dir a": the destination is -t's value, not the last word.
		a.write(t.val, inv.prog+" -t")
		return
	}
	if ops := writeOperands(inv.args); len(ops) > 1 {
		a.write(ops[len(ops)-1].val, inv.prog)
		a.noteCopy(ops[0], ops[len(ops)-1])
	}
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

// truncateWrites records the file truncate resizes.
func truncateWrites(a *analyzer, inv invocation) {
	args := inv.args
	o := scanOpts(args, 1, optSpec{short: "sr", long: []string{"size", "reference"}})
	if o.next < len(args) {
		a.write(args[o.next].val, "truncate")
	}
}

// teeWrites records the first file tee writes that is not a harmless sink.
func teeWrites(a *analyzer, inv invocation) {
	for _, w := range writeOperands(inv.args) {
		if !harmlessSink(w.val) {
			a.write(w.val, "tee")
			return
		}
	}
}

// ddWrites records the file dd of= writes.
func ddWrites(a *analyzer, inv invocation) {
	for _, w := range inv.args[1:] {
		if v, ok := strings.CutPrefix(w.val, "of="); ok && !harmlessSink(v) {
			a.write(v, "dd of=")
		}
	}
}

// patchWrites records that patch writes (the first operand, its file to
// patch), unless --dry-run.
func patchWrites(a *analyzer, inv invocation) {
	for _, w := range inv.args[1:] {
		if w.val == "--dry-run" {
			return
		}
	}
	a.write(firstWriteOperand(inv.args), "patch")
}

// unzipWrites records that unzip extracts, unless it only lists, tests or
// prints.
func unzipWrites(a *analyzer, inv invocation) {
	for _, w := range inv.args[1:] {
		if w.val == "-l" || w.val == "-t" || w.val == "-Z" || w.val == "-p" {
			return
		}
	}
	a.write(firstWriteOperand(inv.args), "unzip")
}

// uniqWrites records the file uniq INPUT OUTPUT writes.
func uniqWrites(a *analyzer, inv invocation) {
	if o := scanAll(inv.args, 1, optSpec{short: "fsw", long: []string{"skip-fields", "skip-chars", "check-chars", "group", "all-repeated"}}); len(o.ops) > 1 && o.ops[1].val != "-" {
		a.write(o.ops[1].val, "uniq OUTPUT")
	}
}

// piecesWrites records that split and csplit write files named from a
// prefix.
func piecesWrites(a *analyzer, inv invocation) {
	a.write("", inv.prog+" writes pieces")
}

// archiveWrites records that an archiver given operands writes an archive
// (7z, rar and ar name it after a subcommand letter).
func archiveWrites(a *analyzer, inv invocation) {
	if len(writeOperands(inv.args)) > 0 {
		a.write("", inv.prog)
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
