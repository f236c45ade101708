package shell

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestProgramRegistry checks every registry entry: one that reports
// network actions must also say its hosts, or say explicitly that it has
// none (noHosts), so a half-registered program cannot pass; and every
// family's programs are in the registry, each in its family's table.
func TestProgramRegistry(t *testing.T) {
	reg := registry()
	for _, name := range slices.Sorted(maps.Keys(reg.programs)) {
		p := reg.programs[name]
		if p.actions != nil && p.hosts == nil && !p.noHosts {
			t.Errorf("program %q reports network actions but neither hosts nor noHosts", name)
		}
		if p.noHosts && p.hosts == nil && p.actions == nil {
			t.Errorf("program %q sets noHosts but reports no actions", name)
		}
		if p.noHosts && p.hosts != nil {
			t.Errorf("program %q has both hosts and noHosts", name)
		}
		for _, al := range p.aliases {
			if got, _ := normalizeProgram(al); got != name {
				t.Errorf("alias %q of %q normalizes to %q", al, name, got)
			}
		}
		if (p.globals != nil || p.runs != nil) && p.run != nil {
			t.Errorf("program %q has globals or runs, which only the generic reading (nil run) reads", name)
		}
	}
	// A registered program must have no row in the generic tables either:
	// command() reads shells and wrappers before the registry, and the
	// others would be a second answer the registry hides.
	for table, m := range map[string]func(string) bool{
		"shells":          func(n string) bool { _, ok := shells()[n]; return ok },
		"wrappers":        func(n string) bool { _, ok := wrappers()[n]; return ok },
		"nonExec":         func(n string) bool { return nonExec()[n] },
		"opaqueExecutors": func(n string) bool { return opaqueExecutors()[n] },
		"globalOpts":      func(n string) bool { _, ok := globalOpts()[n]; return ok },
		"interpreters":    func(n string) bool { _, ok := interpreters()[n]; return ok },
		"runners":         func(n string) bool { _, ok := runners()[n]; return ok },
		"pkgRead":         func(n string) bool { return pkgRead()[n] != nil },
		"pkgWrite":        func(n string) bool { return pkgWrite()[n] != nil },
	} {
		for name := range reg.programs {
			if m(name) {
				t.Errorf("program %q is in the registry and in %s", name, table)
			}
		}
	}
	families := map[string]struct {
		table map[string]*program
		names []string
	}{
		"net":    {reg.families["net"], []string{"curl", "wget", "http", "https", "httpie", "xh", "xhs", "nc", "ncat", "netcat", "telnet", "socat"}},
		"remote": {reg.families["remote"], []string{"ssh", "scp", "sftp", "rsync"}},
		"vcs":    {reg.families["vcs"], []string{"git", "gh"}},
		"dns":    {reg.families["dns"], []string{"dig", "nslookup", "host", "drill", "delv", "kdig", "resolvectl", "getent"}},
		"proto": {reg.families["proto"], []string{"ftp", "tftp", "lftp", "ftpget", "ftpput", "ssl_client", "aria2c", "axel", "lynx", "links",
			"elinks", "w3m", "whois", "ping", "ping6", "fping", "arping", "traceroute", "traceroute6", "tracepath", "mtr", "nmap", "hping3", "openssl"}},
		"cloud": {reg.families["cloud"], []string{"aws", "gcloud", "az", "kubectl", "oc", "helm", "doctl", "flyctl", "heroku", "vercel", "netlify",
			"wrangler", "rclone", "s3cmd", "gsutil"}},
		"pkg": {reg.families["pkg"], []string{"go", "npm", "pnpm", "yarn", "pip", "pip3", "uv", "cargo", "gem", "bundle"}},
		"builtin": {reg.families["builtin"], []string{"command", "hash", "alias", "enable", "eval", "source", ".", "fc", "zmodload", "emulate",
			"printf", "read", "getopts", "mapfile", "readarray", "trap", "complete", "compgen"}},
		"editor": {reg.families["editor"], []string{"vim", "vi", "nvim", "gvim", "view", "vimdiff", "ex", "rvim", "rview", "evim", "vimx",
			"ed", "red", "gdb"}},
		"exec": {reg.families["exec"], []string{"env", "sudo", "sudoedit", "xargs", "find", "fd", "fdfind", "parallel", "watch", "sg", "newgrp",
			"su", "runuser", "flock", "script", "busybox", "toybox"}},
		"file": {reg.families["file"], []string{"sort", "rg", "tar", "touch", "mkdir", "rm", "rmdir", "unlink", "shred", "mkfifo", "mknod",
			"gzip", "gunzip", "bzip2", "xz", "unxz", "zstd", "sponge", "chmod", "chown", "chgrp", "cp", "mv", "ln", "install",
			"truncate", "tee", "dd", "patch", "unzip", "uniq", "split", "csplit", "zip", "7z", "7za", "rar", "ar"}},
		"lookup": {reg.families["lookup"], []string{"which", "type", "whereis", "help", "whatis", "apropos", "tldr", "info", "man"}},
	}
	for fam, f := range families {
		for _, name := range f.names {
			if f.table[name] == nil {
				t.Errorf("program %q is not in the %s family's table", name, fam)
			}
			if reg.programs[name] != f.table[name] {
				t.Errorf("program %q: the registry does not hold the %s family's entry", name, fam)
			}
		}
	}
}

// registrySamples are, for every registry entry, one line it reads as
// contacting a host: the entry's actions and hosts must both answer. An
// entry that says noHosts has no host in its sample (""). An entry with
// neither actions nor hosts (a builtin, an editor) contacts a host only
// through a command it runs: its sample is such a line, or, when it runs
// none, a line with no host that must report no network at all.
var registrySamples = map[string]struct {
	line, host string
}{
	"curl":   {"curl -sS https://a.example/x", "a.example"},
	"wget":   {"wget -q https://a.example/x", "a.example"},
	"http":   {"http a.example/x", "a.example"},
	"https":  {"https POST a.example/x a=b", "a.example"},
	"httpie": {"httpie a.example/x", "a.example"},
	"xh":     {"xh a.example/x", "a.example"},
	"xhs":    {"xhs a.example/x", "a.example"},
	"nc":     {"nc a.example 80", "a.example"},
	"ncat":   {"ncat -p 1 a.example 80", "a.example"},
	"netcat": {"netcat a.example 80", "a.example"},
	"telnet": {"telnet a.example 23", "a.example"},
	"socat":  {"socat - TCP:a.example:80", "a.example"},
	"ssh":    {"ssh -p 22 u@a.example", "a.example"},
	"scp":    {"scp f u@a.example:/x", "a.example"},
	"sftp":   {"sftp u@a.example", "a.example"},
	"rsync":  {"rsync -av f a.example:/x", "a.example"},

	"git": {"git push https://a.example/r main", "a.example"},
	"gh":  {"gh api repos/o/r/pulls", "api.github.com"},

	"dig":        {"dig +short a.example MX", "a.example"},
	"nslookup":   {"nslookup a.example", "a.example"},
	"host":       {"host -t AAAA a.example", "a.example"},
	"drill":      {"drill a.example", "a.example"},
	"delv":       {"delv @9.9.9.9 a.example", "a.example"},
	"kdig":       {"kdig a.example", "a.example"},
	"resolvectl": {"resolvectl query a.example", ""},
	"getent":     {"getent hosts a.example", ""},

	"ftp":         {"ftp a.example", ""},
	"tftp":        {"tftp a.example", ""},
	"lftp":        {"lftp a.example", ""},
	"ftpget":      {"ftpget a.example f", ""},
	"ftpput":      {"ftpput a.example f", ""},
	"ssl_client":  {"ssl_client a.example", ""},
	"aria2c":      {"aria2c ftp://a.example/f", ""},
	"axel":        {"axel ftp://a.example/f", ""},
	"lynx":        {"lynx gopher://a.example", ""},
	"links":       {"links gopher://a.example", ""},
	"elinks":      {"elinks gopher://a.example", ""},
	"w3m":         {"w3m gopher://a.example", ""},
	"whois":       {"whois a.example", ""},
	"ping":        {"ping -c 1 a.example", ""},
	"ping6":       {"ping6 a.example", ""},
	"fping":       {"fping a.example", ""},
	"arping":      {"arping a.example", ""},
	"traceroute":  {"traceroute a.example", ""},
	"traceroute6": {"traceroute6 a.example", ""},
	"tracepath":   {"tracepath a.example", ""},
	"mtr":         {"mtr a.example", ""},
	"nmap":        {"nmap -p 443 a.example", ""},
	"hping3":      {"hping3 a.example", ""},
	"openssl":     {"openssl s_client -connect a.example:443", "a.example"},

	"aws":      {"aws --region eu-west-1 s3 ls", ""},
	"gcloud":   {"gcloud --project p compute instances list", ""},
	"az":       {"az vm list", ""},
	"kubectl":  {"kubectl -n prod get pods", ""},
	"oc":       {"oc get pods", ""},
	"helm":     {"helm install x https://a.example/x.tgz", "a.example"},
	"doctl":    {"doctl compute droplet list", ""},
	"flyctl":   {"flyctl deploy", ""},
	"heroku":   {"heroku apps", ""},
	"vercel":   {"vercel deploy", ""},
	"netlify":  {"netlify deploy", ""},
	"wrangler": {"wrangler deploy", ""},
	"rclone":   {"rclone copy f remote:b", ""},
	"s3cmd":    {"s3cmd ls s3://b", ""},
	"gsutil":   {"gsutil ls gs://b", ""},

	"go":     {"go get a.example/m@v1", "proxy.golang.org"},
	"npm":    {"npm install", "registry.npmjs.org"},
	"pnpm":   {"pnpm install", "registry.npmjs.org"},
	"yarn":   {"yarn", "registry.yarnpkg.com"},
	"pip":    {"pip install requests", "pypi.org"},
	"pip3":   {"pip3 install requests", "files.pythonhosted.org"},
	"uv":     {"uv pip install requests", "pypi.org"},
	"cargo":  {"cargo fetch", "index.crates.io"},
	"gem":    {"gem install rails", "rubygems.org"},
	"bundle": {"bundle install", "rubygems.org"},

	"command":   {"command curl https://a.example/x", "a.example"},
	"hash":      {"hash -r", ""},
	"alias":     {"alias ll", ""},
	"enable":    {"enable", ""},
	"eval":      {"eval curl https://a.example/x", "a.example"},
	"source":    {"source /dev/stdin <<< 'curl https://a.example/x'", "a.example"},
	".":         {". /dev/stdin <<< 'curl https://a.example/x'", "a.example"},
	"fc":        {"fc -l", ""},
	"zmodload":  {"zmodload", ""},
	"emulate":   {"emulate zsh", ""},
	"printf":    {"printf '%s' x", ""},
	"read":      {"read -r x", ""},
	"getopts":   {"getopts ab opt", ""},
	"mapfile":   {"mapfile -C 'curl https://a.example/x' arr", "a.example"},
	"readarray": {"readarray -C 'curl https://a.example/x' arr", "a.example"},
	"trap":      {"trap 'curl https://a.example/x' EXIT", "a.example"},
	"complete":  {"complete -C 'curl https://a.example/x' git", "a.example"},
	"compgen":   {"compgen -C 'curl https://a.example/x' g", "a.example"},

	"vim":     {"vim f", ""},
	"vi":      {"vi f", ""},
	"nvim":    {"nvim f", ""},
	"gvim":    {"gvim f", ""},
	"view":    {"view f", ""},
	"vimdiff": {"vimdiff f g", ""},
	"ex":      {"ex f", ""},
	"rvim":    {"rvim f", ""},
	"rview":   {"rview f", ""},
	"evim":    {"evim f", ""},
	"vimx":    {"vimx f", ""},
	"ed":      {"ed f", ""},
	"red":     {"red f", ""},
	"gdb":     {"gdb -ex 'shell curl https://a.example/x'", "a.example"},

	"env":      {"env A=1 curl https://a.example/x", "a.example"},
	"sudo":     {"sudo -u u curl https://a.example/x", "a.example"},
	"sudoedit": {"sudoedit /etc/hosts", ""},
	"xargs":    {"xargs -n1 curl https://a.example/x", "a.example"},
	"find":     {"find . -exec curl https://a.example/x \\;", "a.example"},
	"fd":       {"fd -x curl https://a.example/x", "a.example"},
	"fdfind":   {"fdfind -x curl https://a.example/x", "a.example"},
	"parallel": {"parallel curl https://a.example/x ::: a", "a.example"},
	"watch":    {"watch curl https://a.example/x", "a.example"},
	"sg":       {"sg g curl https://a.example/x", "a.example"},
	"newgrp":   {"newgrp g <<< 'curl https://a.example/x'", "a.example"},
	"su":       {"su -c 'curl https://a.example/x'", "a.example"},
	"runuser":  {"runuser -u u curl https://a.example/x", "a.example"},
	"flock":    {"flock /tmp/l curl https://a.example/x", "a.example"},
	"script":   {"script -c 'curl https://a.example/x' /dev/null", "a.example"},
	"busybox":  {"busybox wget https://a.example/x", "a.example"},
	"toybox":   {"toybox wget https://a.example/x", "a.example"},

	"sort": {"sort -o out in", ""},
	"rg":   {"rg --pre pdftotext pat", ""},
	"tar":  {"tar -I 'curl https://a.example/x' -xf a.tar", "a.example"},

	"touch":    {"touch f", ""},
	"mkdir":    {"mkdir -p d", ""},
	"rm":       {"rm -f f", ""},
	"rmdir":    {"rmdir d", ""},
	"unlink":   {"unlink f", ""},
	"shred":    {"shred -u f", ""},
	"mkfifo":   {"mkfifo p", ""},
	"mknod":    {"mknod p p", ""},
	"gzip":     {"gzip f", ""},
	"gunzip":   {"gunzip f.gz", ""},
	"bzip2":    {"bzip2 f", ""},
	"xz":       {"xz f", ""},
	"unxz":     {"unxz f.xz", ""},
	"zstd":     {"zstd f", ""},
	"sponge":   {"sponge f", ""},
	"chmod":    {"chmod +x f", ""},
	"chown":    {"chown u f", ""},
	"chgrp":    {"chgrp g f", ""},
	"cp":       {"cp a b", ""},
	"mv":       {"mv a b", ""},
	"ln":       {"ln -s a b", ""},
	"install":  {"install -m 755 a /usr/local/bin/a", ""},
	"truncate": {"truncate -s 0 f", ""},
	"tee":      {"tee f", ""},
	"dd":       {"dd if=a of=b", ""},
	"patch":    {"patch -p1 f", ""},
	"unzip":    {"unzip a.zip", ""},
	"uniq":     {"uniq in out", ""},
	"split":    {"split -l 10 f p", ""},
	"csplit":   {"csplit f 10", ""},
	"zip":      {"zip a.zip f", ""},
	"7z":       {"7z a a.7z f", ""},
	"7za":      {"7za a a.7z f", ""},
	"rar":      {"rar a a.rar f", ""},
	"ar":       {"ar rcs a.a f.o", ""},

	"which":   {"which git", ""},
	"type":    {"type git", ""},
	"whereis": {"whereis git", ""},
	"help":    {"help cd", ""},
	"whatis":  {"whatis git", ""},
	"apropos": {"apropos git", ""},
	"tldr":    {"tldr git", ""},
	"info":    {"info git", ""},
	"man":     {"man -P 'curl https://a.example/x' git", "a.example"},
}

func TestProgramRegistrySamples(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(programs())) {
		s, ok := registrySamples[name]
		if !ok {
			t.Errorf("program %q has no sample line in registrySamples", name)
			continue
		}
		c := Classify(s.line)
		if c.Unparseable || !slices.Contains(c.Programs, name) {
			t.Errorf("%q: unparseable %v (%s), programs %v", s.line, c.Unparseable, c.Reason, c.Programs)
			continue
		}
		if programs()[name].actions != nil && len(ClassifyNetworkActions(c, "")) == 0 {
			t.Errorf("%q: no network actions", s.line)
		}
		if s.host == "" {
			if p := programs()[name]; p.actions == nil && p.hosts == nil {
				if n := ClassifyNetworkActions(c, ""); len(n) != 0 {
					t.Errorf("%q: network actions %v from an entry with none that runs no command", s.line, n)
				}
			} else if !p.noHosts {
				t.Errorf("%q: sample without a host, but the entry does not say noHosts", s.line)
			}
			if d := c.Domains(); len(d) != 0 {
				t.Errorf("%q: domains %v from an entry that says noHosts", s.line, d)
			}
			continue
		}
		if d := c.Domains(); !slices.Contains(d, s.host) {
			t.Errorf("%q: domains %v, want %s among them", s.line, d, s.host)
		}
	}
}

// TestRegistryProgramsHaveNoCases fails when a generic walk outside the
// registry's family files keeps a switch case for a registered program:
// the registry answers for it first, so such a case is dead code, or a
// second place the program's grammar lives.
func TestRegistryProgramsHaveNoCases(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "prog_") || file == "registry.go" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				bl, ok := e.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					continue
				}
				if v, err := strconv.Unquote(bl.Value); err == nil && programs()[v] != nil {
					t.Errorf("%s: case %q for a program the registry holds", fset.Position(bl.Pos()), v)
				}
			}
			return true
		})
	}
}

// TestHTTPieHostAfterLongOptions: a long option's value is not httpie's
// URL ("http --session NAME HOST" contacts HOST).
func TestHTTPieHostAfterLongOptions(t *testing.T) {
	for _, line := range []string{"http --session work api.example.com", "https --timeout 5 api.example.com/x", "http --verify no POST api.example.com a=1"} {
		if got := Classify(line).Domains(); len(got) != 1 || got[0] != "api.example.com" {
			t.Errorf("%s: hosts %v, want [api.example.com]", line, got)
		}
	}
}

// TestGitHostsUnderTheSubcommandsGrammar: git's repository host was read
// with one option table for every subcommand while the run read each with
// its own (gitSubOpts), so a value of the subcommand's option was taken
// for the repository and the real one went unchecked ("git clone -c
// allowed.example:x https://evil.example/r" reported only
// allowed.example). Both readings now answer.
func TestGitHostsUnderTheSubcommandsGrammar(t *testing.T) {
	for line, want := range map[string]string{
		"git clone -c allowed.example:x https://evil.example/r": "evil.example",
		"git pull -s ours https://evil.example/r":               "evil.example",
		"git clone -c core.sshCommand=x git@evil.example:r":     "evil.example",
		"git clone https://evil.example/r":                      "evil.example",
	} {
		if got := Classify(line).Domains(); !slices.Contains(got, want) {
			t.Errorf("%s: hosts %v, want %s among them", line, got, want)
		}
	}
}

// TestGitRemoteFetchesHaveActions: Domains read git archive and git remote
// as contacting hosts while networkActions reported no network for them;
// git archive --remote and git remote add -f do fetch, so they now perform
// git:fetch (and an option word that is not static may be either).
func TestGitRemoteFetchesHaveActions(t *testing.T) {
	for line, want := range map[string]string{
		"git archive --remote=git@evil.example:r HEAD":              "git:fetch",
		"git archive --format tar --remote git@evil.example:r HEAD": "git:fetch",
		"git archive --rem=ssh://evil.example/r HEAD":               "git:fetch",
		`git archive "$R" HEAD`:                                     "git:fetch",
		"git archive -o out.tar HEAD":                               "",
		"git remote add -f o https://evil.example/r":                "git:fetch",
		"git remote add --fetch o https://evil.example/r":           "git:fetch",
		"git remote add --fe o https://evil.example/r":              "git:fetch",
		"git remote add -ft main o https://evil.example/r":          "git:fetch",
		`git remote add $OPT o https://evil.example/r`:              "git:fetch",
		"git remote add -t f o https://evil.example/r":              "",
		"git remote add o https://evil.example/r":                   "",
		"git remote add --mirror=fetch o https://evil.example/r":    "",
		"git remote -v add -f o https://evil.example/r":             "git:fetch",
	} {
		got := strings.Join(ClassifyNetworkActions(Classify(line), ""), " ")
		if got != want {
			t.Errorf("%s: actions %q, want %q", line, got, want)
		}
	}
	for line, want := range map[string]string{
		"git archive --remote=git@evil.example:r HEAD":              "evil.example",
		"git archive --format tar --remote git@evil.example:r HEAD": "evil.example",
		"git archive --remote ssh://evil.example/r HEAD":            "evil.example",
	} {
		if got := Classify(line).Domains(); !slices.Contains(got, want) {
			t.Errorf("%s: hosts %v, want %s among them", line, got, want)
		}
	} // A local archive's operands are tree-ishes, not hosts.
	if got := Classify("git archive --format tar HEAD:docs").Domains(); len(got) != 0 {
		t.Errorf("git archive --format tar HEAD:docs: hosts %v, want none", got)
	}
}
