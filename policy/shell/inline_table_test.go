package shell

import "testing"

// inlineTable is the specification of inline interpreter code that
// reaches an exec or network module under another name: an
// import … as, a from … import, attribute access by string, a module
// bound to a variable, a pipe open, a destructured rename. Each row is
// read as what it runs when that is literal, or is Unparseable; never as
// running nothing. TestDifferentialInline runs the python, node and perl
// rows under the real interpreters.
var inlineTable = []tcase{
	// python
	{line: `python3 -c 'import subprocess as sp; sp.run(["git", "push"])'`, progs: "python3 git", deny: "git:push"},
	{line: `python3 -c 'import subprocess as sp; sp.run(c)'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'from os import system as s; s("git push")'`, progs: "python3 git", deny: "git:push"},
	{line: `python3 -c '__import__("os").system("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import os; getattr(os, "sys" + "tem")("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import importlib; importlib.import_module("os").system("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import os; os.__dict__["system"]("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import os; vars(os)["system"]("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import asyncio; asyncio.run(asyncio.create_subprocess_exec("git", "push"))'`, progs: "python3 git", deny: "git:push"},
	{line: `python3 -c 'import shutil; print(shutil.which("git"))'`, progs: "python3"},
	{line: `python3 -c 'import os.path as p; print(p.join("a", "b"))'`, progs: "python3"},
	{line: `python3 -c 'import os as o; o.system("git push")'`, progs: "python3 git", deny: "git:push"},
	{line: `python3 -c 'from subprocess import run as r; r(["git", "push"])'`, progs: "python3 git", deny: "git:push"},
	{line: `python3 -c 'from subprocess import check_output; print(check_output(["ls"]))'`, progs: "python3 ls"},
	{line: `python3 -c 'from subprocess import *; run(["git", "push"])'`, progs: "python3", unp: "import *", deny: unp},
	{line: `python3 -c 'import os; x = os; x.system("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import os; sh = getattr(os, "popen"); sh("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import sys; sys.modules["os"].system("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import builtins; builtins.__import__("os").system("git push")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import _posixsubprocess'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import pickle; pickle.loads(b"x")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'import os; print(os.getcwd())'`, progs: "python3"},
	{line: `python3 -c 'import json, sys; print(json.dumps(sys.argv))'`, progs: "python3"},
	{line: `python3 -c 'import socket as s; s.create_connection(("x.test", 80))'`, progs: "python3", unp: "opens network connections", deny: unp},
	{line: `python3 -c 'u = __import__("urllib.request"); u.request.urlopen("http://x.test/")'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'print(().__class__.__base__.__subclasses__())'`, progs: "python3", unp: "cannot read", deny: unp},
	{line: `python3 -c 'if __name__ == "__main__": print(1)'`, progs: "python3"},

	// node
	{line: `node -e 'const cp = require("child_process"); cp.execSync("git push")'`, progs: "node git", deny: "git:push"},
	{line: `node -e 'const cp = require("child_process"); cp.execSync(c)'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'require("child" + "_process").execSync("git push")'`, progs: "node", unp: "require", deny: unp},
	{line: `node -e 'const m = "child_process"; require(m).execSync("id")'`, progs: "node", unp: "require", deny: unp},
	{line: `node -e 'const {execSync: x} = require("child_process"); x("git push")'`, progs: "node git", deny: "git:push"},
	{line: `node -e 'const {execFileSync: run, spawnSync} = require("child_process"); run("git", ["push"])'`, progs: "node git", deny: "git:push"},
	{line: `node -e 'require("child_process")["exec" + "Sync"]("git push")'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'const cp = require("child_process"); cp["execSync"]("git push")'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'process.binding("spawn_sync").spawn({file: "git", args: ["git", "push"], stdio: []})'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'const cp = require("node:child_process"); cp.fork("x.js")'`, progs: "node", unp: "cannot read", deny: unp},
	{line: "node -e 'const cp = require(`child_process`); cp.execSync(`git push`)'", progs: "node git", deny: "git:push"},
	{line: `node -e 'import("child_process").then(m => m.execSync("git push"))'`, progs: "node git", deny: "git:push"},
	{line: `node -e 'const w = require("worker_threads"); new w.Worker("x", {eval: true})'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'console.log("".constructor.constructor("return 1")())'`, progs: "node", unp: "cannot read", deny: unp},
	{line: `node -e 'require("dns").lookup("x.test", console.log)'`, progs: "node", unp: "opens network connections", deny: unp},
	{line: `node -e 'console.log(require("os").hostname())'`, progs: "node"},
	{line: `node -e 'const fs = require("fs"); console.log(fs.readdirSync("."))'`, progs: "node"},
	{line: `node -e 'const p = require("path"); console.log(p.join("a", "b"))'`, progs: "node"},

	// perl
	{line: `perl -e 'open(my $f, "-|", "git", "push")'`, progs: "perl git", deny: "git:push"},
	{line: `perl -e 'open(F, "git push |"); print <F>'`, progs: "perl git", deny: "git:push"},
	{line: `perl -e 'open F, "| git push"'`, progs: "perl git", deny: "git:push"},
	{line: `perl -e 'open(F, $c)'`, progs: "perl", unp: "cannot read", deny: unp},
	{line: `perl -e 'open(my $f, "<", "x.txt") or die; print <$f>'`, progs: "perl"},
	{line: `perl -e 'print readpipe("git push")'`, progs: "perl git", deny: "git:push"},
	{line: `perl -e 'use IPC::Open3; open3(my $i, my $o, undef, "git", "push")'`, progs: "perl", unp: "IPC::Open3", deny: unp},
	{line: `perl -MIPC::Open2 -e 'open2(my $o, my $i, "git push")'`, progs: "perl", unp: "IPC::Open2", deny: unp},
	{line: `perl -e 'my $s = \&CORE::system; $s->("git push")'`, progs: "perl", unp: "cannot read", deny: unp},
	{line: `perl -e 'syscall(59, "/usr/bin/git", 0, 0)'`, progs: "perl", unp: "cannot read", deny: unp},
	{line: `perl -e 'exec {"git"} "git", "push"'`, progs: "perl", unp: "cannot read", deny: unp},
	{line: `perl -MIO::Socket::INET -e 'IO::Socket::INET->new("x.test:80")'`, progs: "perl", unp: "opens network connections", deny: unp},
	{line: `perl -MLWP::Simple -e 'get("http://x.test/")'`, progs: "perl", unp: "opens network connections", deny: unp},
	{line: `perl -MSocket -e 'print 1'`, progs: "perl", unp: "opens network connections", deny: unp},
	{line: `perl -e 'my $o = qx(git push)'`, progs: "perl", unp: "qx", deny: unp},
	{line: `perl -MList::Util=sum -e 'print sum(1, 2)'`, progs: "perl"},
	{line: `perl -e 'print "hello\n"'`, progs: "perl"},
	{line: `perl -e 'print 1 if $a && $b'`, progs: "perl"},

	// node: names reached by a computed key
	{line: `node -e 'console.log(""["constructor"]["constructor"]("return 1")())'`, progs: "node", unp: "computed name", deny: unp},
	{line: `node -e 'const k = "constructor"; console.log(""[k][k]("return 1")())'`, progs: "node", unp: "computed name", deny: unp},
	{line: `node -e 'const a = [1, 2]; console.log(a[0])'`, progs: "node"},
	{line: `node -e 'class A { constructor() { this.x = 1 } }; console.log(new A().x)'`, progs: "node"},
	{line: `node -r ./hook.js -e 'console.log(1)'`, progs: "node", opaque: "node"},

	// ruby (no differential: not installed here)
	{line: `ruby -e 'Kernel.send(:system, "git push")'`, progs: "ruby", unp: "cannot read", deny: unp},
	{line: `ruby -e 'open("|git push")'`, progs: "ruby", unp: "opens a pipe", deny: unp},
	{line: `ruby -e 'IO.read("|git push")'`, progs: "ruby", unp: "opens a pipe", deny: unp},
	{line: `ruby -e 'open(path)'`, progs: "ruby", unp: "not a literal", deny: unp},
	{line: `ruby -e 'm = Open3; m.capture2("git push")'`, progs: "ruby", unp: "Open3 module as a value", deny: unp},
	{line: `ruby -e 'Object.const_get(:Kernel).system("git push")'`, progs: "ruby", unp: "cannot read", deny: unp},
	{line: `ruby -ropen3 -e 'Open3.capture2("git push")'`, progs: "ruby git", deny: "git:push"},
	{line: `ruby -rsocket -e 'puts 1'`, progs: "ruby", unp: "opens network connections", deny: unp},
	{line: `ruby -e 'puts File.read("x")'`, progs: "ruby"},

	// php
	{line: `php -r '$f = "sys" . "tem"; $f("git push");'`, progs: "php", unp: "calls a function by name", deny: unp},
	{line: `php -r 'call_user_func("system", "git push");'`, progs: "php", unp: "call_user_func", deny: unp},
	{line: `php -r 'array_map("system", ["git push"]);'`, progs: "php", unp: "array_map", deny: unp},
	{line: "php -r 'echo `git push`;'", progs: "php git", deny: "git:push"},
	{line: `php -r 'echo strlen("abc");'`, progs: "php"},

	// lua, R, julia
	{line: `lua -e 'local o = os; o.execute("git push")'`, progs: "lua", unp: "os library as a value", deny: unp},
	{line: `lua -e 'local e = _G["o" .. "s"]; e.execute("id")'`, progs: "lua", unp: "cannot read", deny: unp},
	{line: `lua -e 'load("os.execute(1)")()'`, progs: "lua", unp: "cannot read", deny: unp},
	{line: `lua -e 'print(os.time())'`, progs: "lua"},
	{line: "Rscript -e '`system`(\"git push\")'", progs: "rscript", unp: "backquotes", deny: unp},
	{line: `Rscript -e 'do.call("system", list("git push"))'`, progs: "rscript", unp: "do.call", deny: unp},
	{line: `Rscript -e 'f <- match.fun("system"); f("id")'`, progs: "rscript", unp: "match.fun", deny: unp},
	{line: `Rscript -e 'print(mean(c(1, 2)))'`, progs: "rscript"},
	{line: "julia -e 'run(`git push`)'", progs: "julia git", deny: "git:push"},
	{line: `julia -e 'run(Cmd(["git", "push"]))'`, progs: "julia", unp: "Cmd(", deny: unp},
	{line: "julia -e 'c = \"push\"; run(`git $c`)'", progs: "julia", unp: "not static", deny: unp},
	{line: `julia -e 'println(1 + 1)'`, progs: "julia"},

	// PowerShell, AppleScript, Tcl, awk
	{line: `pwsh -c 'git push'`, progs: "pwsh", unp: "PowerShell", deny: unp},
	{line: `pwsh -Command 'Get-ChildItem'`, progs: "pwsh", unp: "PowerShell", deny: unp},
	{line: `osascript -e 'do shell script "ls"' -e 'do shell script "git " & "push"'`, progs: "osascript ls", unp: "built at run time", deny: unp},
	{line: `osascript -e 'do shell script "ls"' -e 'do shell script "git push"'`, progs: "osascript ls git", deny: "git:push"},
	{line: `osascript -e 'tell application "Terminal" to do script "git push"'`, progs: "osascript", unp: "do script", deny: unp},
	{line: `osascript -l JavaScript -e 'Application.currentApplication().doShellScript("git push")'`, progs: "osascript", unp: "doShellScript", deny: unp},
	{line: `expect -c 'set c exec; $c git push'`, progs: "expect", unp: "cannot read", deny: unp},
	{line: `expect -c 'puts hello'`, progs: "expect"},
	{line: `awk 'BEGIN { f = "sys" "tem"; @f("git push") }'`, progs: "awk", unp: "gawk @", deny: unp},
	{line: `awk '/user@host/ { print }' f`, progs: "awk"},
}

func TestInlineTable(t *testing.T) {
	seen := map[string]bool{}
	for _, rows := range [][]tcase{table, bypassTable} {
		for _, tc := range rows {
			seen[tc.line] = true
		}
	}
	for i, tc := range inlineTable {
		if seen[tc.line] {
			t.Errorf("inlineTable row %d duplicates a row: %q", i, tc.line)
		}
		seen[tc.line] = true
	}
	runTable(t, inlineTable)
}
