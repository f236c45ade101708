package hooks

import (
	"fmt"
	"strings"
)

// The hook command Install writes is not hookgate itself but a small POSIX
// shell wrapper around it, so that a failure of hookgate is a deny however
// it fails: the harnesses run a hook that is missing, not executable,
// killed, exits 1, hangs past their timeout or prints what they cannot
// read, and then (all but Cursor with failClosed) run the tool. The
// wrapper gives hookgate WrapperDeadline, passes an answer through only
// when hookgate exited 0 with nothing or a JSON object on stdout, or 2 (its
// own deny), and otherwise answers the harness's deny itself (hooks.Fail,
// rendered at install time: exit 2, the reason on stderr, the JSON deny
// where the harness reads one). /bin/sh is everywhere these harnesses run.

// WrapperDeadline is how long the wrapper waits for hookgate, in tenths
// of a second: above MaxDeadline (hookgate answers first whenever it
// works) and under hookTimeout (the wrapper answers before the harness
// gives up on it).
const WrapperDeadline = 90

// DoneEnv names the file hookgate creates once its answer is written: the
// wrapper passes an exit-0 answer only when it exists, so a stand-in that
// exits 0 silently (an empty file at hookgate's path) or a write that
// failed (a full disk) is a deny.
const DoneEnv = "HOOKGATE_DONE"

// wrapperName is the wrapper's $0: it marks the entry as hookgate's.
const wrapperName = "hookgate-failclosed"

// wrapperScript runs "$@" (hookgate check ...) with the payload, after
// the harness's deny answer in $1, giving it tenths/10 seconds, and passes
// through only answers of h's shapes.
func wrapperScript(h Harness, tenths int) string {
	p := mustProtocol(h)
	ok, deny := strings.Join(p.answerShapes, "|"), strings.Join(p.denyShapes, "|")
	if ok == "" {
		ok, deny = `''`, `''`
	}
	return strings.Join([]string{
		`d=$1; shift`,
		`deny() { [ -n "$d" ] && printf '%s\n' "$d"; echo "hookgate: $1; denied" >&2; exit 2; }`,
		`t=$(mktemp -d "${TMPDIR:-/tmp}/hookgate.XXXXXX" 2>/dev/null) || t=$(mktemp -d 2>/dev/null) || deny "no temporary directory for the hook"`,
		`trap 'rm -rf "$t"' EXIT`,
		// The payload goes straight to hookgate: an asynchronous command's
		// stdin is /dev/null unless redirected, so it gets the wrapper's own
		// through fd 3.
		`exec 3<&0`,
		`HOOKGATE_DONE="$t/done" "$@" <&3 >"$t/o" 2>"$t/e" &`,
		`p=$!`,
		`exec 3<&-`,
		// One sleep, not a polling count: a busy machine stretches every
		// round of a loop, not a single timer. The watchdog stops its sleep
		// when it is stopped itself, so no process outlives the answer.
		// (The trap comes first: stopped before it, the watchdog has not
		// started its sleep. Stopped after the sleep started but before $s
		// was set, the trap only notes it, and the watchdog stops the
		// sleep once it knows its pid. The sleep gets SIGKILL: a TERM
		// reaching it between fork and exec meets the shell's inherited
		// trap and is lost, which left one sleep in fifteen running.)
		fmt.Sprintf(`(s=; x=; trap 'x=1; if [ -n "$s" ]; then kill -9 $s; exit 0; fi' TERM; sleep %s & s=$!; if [ -n "$x" ]; then kill -9 $s; exit 0; fi; wait $s; : >"$t/k"; kill -9 $p) >/dev/null 2>&1 & w=$!`, tenthsString(tenths)),
		`wait $p; c=$?`,
		`kill $w 2>/dev/null`,
		fmt.Sprintf(`[ -e "$t/k" ] && deny "hookgate did not answer within %s s"`, tenthsString(tenths)),
		`o=$(cat "$t/o")`,
		`pass() { [ -n "$o" ] && printf '%s\n' "$o"; [ -s "$t/e" ] && cat "$t/e" >&2; exit $1; }`,
		`case $c in`,
		`0) [ -e "$t/done" ] || deny "hookgate exited without writing its answer";`,
		`   case $o in ` + ok + `) pass 0;; esac; deny "hookgate answered in a form the harness cannot read";;`,
		`2) case $o in ` + deny + `) [ -s "$t/e" ] || echo "hookgate: denied" >&2; pass 2;; esac; deny "hookgate answered in a form the harness cannot read";;`,
		`126) deny "hookgate is not executable: $1";;`,
		`127) deny "hookgate not found: $1";;`,
		`esac`,
		`deny "hookgate failed (exit status $c)"`,
	}, "\n")
}

// tenthsString writes tenths of a second as sleep's argument ("9", "0.5").
func tenthsString(tenths int) string {
	if tenths%10 == 0 {
		return fmt.Sprint(tenths / 10)
	}
	return fmt.Sprintf("%d.%d", tenths/10, tenths%10)
}

// wrappedCommand is the hook command for argv (hookgate's absolute path
// and its arguments), whose failures answer deny in h's form.
func wrappedCommand(h Harness, argv []string) string {
	return wrappedCommandWithin(h, argv, WrapperDeadline)
}

// wrappedCommandWithin is wrappedCommand with another deadline (tests).
func wrappedCommandWithin(h Harness, argv []string, tenths int) string {
	fail := Fail(h, "hookgate failed; denied")
	deny := strings.TrimSpace(string(fail.Stdout))
	parts := []string{"/bin/sh", "-c", shellQuote(wrapperScript(h, tenths)), wrapperName, shellQuote(deny)}
	for _, a := range argv {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// unwrap returns the hookgate command words inside a wrapper command, or
// the words themselves when they are not one.
func unwrap(w []string) []string {
	if len(w) >= 5 && (w[0] == "/bin/sh" || w[0] == "sh") && w[1] == "-c" && w[3] == wrapperName {
		return w[5:]
	}
	return w
}

// HookgateCommand returns the hookgate command a hook command runs (its
// words shell-quoted and joined), out of the fail-closed wrapper, or ""
// when the command is not hookgate's.
func HookgateCommand(cmd string) string {
	if !isOurs(cmd) {
		return ""
	}
	w, _ := shellWords(cmd)
	var parts []string
	for _, x := range unwrap(w) {
		parts = append(parts, shellQuote(x))
	}
	return strings.Join(parts, " ")
}
