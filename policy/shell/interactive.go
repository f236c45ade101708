package shell

import (
	"path/filepath"
	"slices"
	"strings"
)

// interactiveReaders read commands from their input when given no script:
// shells, REPLs, database and network clients, debuggers, su, sudo and ssh.
var interactiveReaders = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true, "yash": true,
	"fish": true, "csh": true, "tcsh": true, "busybox": true,
	"python": true, "pypy": true, "pypy3": true, "ipython": true, "ipython3": true, "node": true, "nodejs": true, "deno": true, "bun": true,
	"irb": true, "ruby": true, "perl": true, "php": true, "lua": true, "R": true, "julia": true, "ghci": true, "dc": true, "bc": true,
	"psql": true, "mysql": true, "sqlite3": true, "redis-cli": true, "telnet": true, "nc": true, "socat": true, "gdb": true, "lldb": true, "ed": true,
	"su": true, "sudo": true, "ssh": true,
}

// alwaysInteractive read the terminal whatever their arguments (a terminal
// multiplexer, an editor or pager with a shell escape, script's shell).
var alwaysInteractive = map[string]bool{
	"script": true, "tmux": true, "screen": true, "vi": true, "vim": true, "nvim": true, "nano": true, "emacs": true,
	"less": true, "more": true, "man": true,
}

// readerOptionsWithArgument take the next word as their value (bash -o vi).
var readerOptionsWithArgument = map[string]bool{
	"-o": true, "+o": true, "-O": true, "+O": true, "--rcfile": true, "--init-file": true, "-X": true, "-W": true,
}

// InteractiveReader returns the first program the line runs that would
// read commands from its input, or "". In this order, for each command of
// the classifier's reading of the line (nested and wrapped ones included):
// a multiplexer, editor or pager reads whatever its arguments (script
// unless given -c); an interpreter, shell or client of interactiveReaders
// (python3.11 as python) reads when it is given -i, --interactive or
// (sudo) -s, or no script: no -c, -e, -E, --eval, -m, --command, -f,
// --file and no operand. A line that does not parse gives "" (the shell
// rules then decide it, failing closed).
//
// A harness whose tool can type into a running command (Codex's
// write_stdin) runs what it types without a hook: hookgate denies a line
// that starts such a reader.
func InteractiveReader(line string) string {
	c := Classify(line)
	if c.Unparseable {
		return ""
	}
	for _, argv := range c.Argvs {
		if len(argv) == 0 {
			continue
		}
		prog := filepath.Base(argv[0])
		if alwaysInteractive[prog] {
			if prog == "script" && slices.Contains(argv[1:], "-c") {
				continue
			}
			return prog
		}
		versioned := strings.TrimRight(prog, "0123456789.")
		if !interactiveReaders[prog] && !(versioned != prog && interactiveReaders[versioned]) {
			continue
		}
		scripted, interactive := false, false
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case a == "-i" || a == "--interactive" || a == "-s" && prog == "sudo":
				interactive = true
			case a == "-c" || a == "-e" || a == "-E" || a == "--eval" || a == "-m" || a == "--command" || a == "-f" || a == "--file":
				scripted = true
			case readerOptionsWithArgument[a]:
				i++
			case a == "-" || a == "-s":
				// the script from stdin
			case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
				scripted = true
			}
		}
		if interactive || !scripted {
			return prog
		}
	}
	return ""
}
