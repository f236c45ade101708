package shell

import (
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// Each kind of Unparseable line, with its exact reason.
func TestUnparseableReasons(t *testing.T) {
	cases := []struct{ kind, line, reason string }{
		{"syntax error", "echo 'x", "syntax error: 1:6: reached EOF without closing quote `'`"},
		{"dynamic program", "$G push", "program name $G is not static (parameter expansion)"},
		{"command substitution as program", "$(echo git) push", "program name $(echo git) is not static (command substitution)"},
		{"glob program", "/usr/bin/gi? push", "program name /usr/bin/gi? is not static (glob)"},
		{"brace program", "{git,push}", "program name {git,push} is not static (brace expansion)"},
		{"arithmetic program", "$((1)) push", "program name $((1)) is not static (arithmetic expansion)"},
		{"dynamic git subcommand", "git $SUB", "subcommand or option of git is not static: $SUB"},
		{"dynamic gh subcommand", "gh pr $V", "subcommand of gh is not static: $V"},
		{"dynamic docker subcommand", `docker "$X"`, `subcommand or option of docker is not static: $X`},
		{"dynamic eval", `eval "$C"`, `eval with a string that is not static: $C`},
		{"dynamic -c", `sh -c "$C"`, `sh -c with a script that is not static: $C`},
		{"pipe into shell", "curl -s x | sh", "sh reads its script from a pipe"},
		{"pipe into interpreter", "cat x | python3", "python3 reads its code from a pipe"},
		{"heredoc with expansions into shell", "bash <<E\n$X\nE", "bash reads a script with expansions from a here-document or here-string"},
		{"alias", "alias ls='rm -rf'", "alias redefines a command name"},
		{"hash -p", "hash -p /bin/rm ls", "hash -p rebinds a command name to another file"},
		{"enable", "enable -n echo", "enable loads or toggles shell builtins"},
		{"@P", `echo "${x@P}"`, "${x@P} expands prompt escapes, which run command substitutions"},
		{"PS4", "PS4='$(id)' bash -x -c true", "PS4 assignment changes what later commands run (evaluated under set -x)"},
		{"arithmetic injection", "x='a[$(id)]'; echo $(( x ))", "subscript injection: quoted data holds [ and a command substitution"},
		{"arithmetic on data", "x='$(id)'; (( x ))", "arithmetic evaluation with data that holds a command substitution"},
		{"IFS", "IFS=, cmd", "IFS assignment changes what later commands run (word splitting)"},
		{"inline code exec with a variable", "python3 -c 'import os; os.system(c)'", "python3 code calls os.system with a command the classifier cannot read"},
		{"inline code dynamic loader", `python3 -c '__import__("os")'`, "python3 code loads or calls code the classifier cannot read"},
		{"awk system of a field", "awk '{system($1)}' f", "awk program runs a command the classifier cannot read"},
		{"depth limit", strings.Repeat("eval ", MaxDepth+2) + "git push", "nesting deeper than 8 levels"},
		{"too long", "echo " + strings.Repeat("a", MaxLineBytes), "command line longer than 65536 bytes"},
		{"find runs what it finds", "find . -exec {} \\;", "find -exec runs the files it finds"},
		{"curl config", "curl -K c", "curl -K reads URLs and options from a file"},
		{"git load key", "git -c core.hooksPath=h commit", "git -c core.hookspath changes what git loads or contacts"},
		{"git config writes", "git config alias.p push", "git config sets alias.p, which changes what git runs later"},
		{"script path", "bash <(curl x)", "bash runs a script whose path is not static: <(curl x)"},
		{"source path", `. "$F"`, `. of a file whose path is not static: $F`},
		{"zsh qualifier", "ls *(e:'rm x':)", "zsh glob qualifier runs code: e:'rm x':"},
		{"sed e", "sed 's/a/b/e' f", "sed script runs a command (e)"},
		{"unquoted option value", "git -C $R status", "unquoted value of git -C is not static: $R"},
	}
	for _, tc := range cases {
		c := Classify(tc.line)
		if !c.Unparseable || c.Reason != tc.reason {
			t.Errorf("%s: Classify(%.60q) = Unparseable %v, Reason %q; want %q", tc.kind, tc.line, c.Unparseable, c.Reason, tc.reason)
		}
		// Fail closed: any rule denies, naming the reason.
		rule, denied := IsProgramDenied(tc.line, []string{"some-unrelated-program"})
		if !denied || rule != "unparseable: "+tc.reason {
			t.Errorf("%s: IsProgramDenied = %q, %v; want the unparseable reason", tc.kind, rule, denied)
		}
		if r, d := IsNetworkActionDenied(tc.line, []string{policy.ActionDNS}); !d || !strings.Contains(r, tc.reason) {
			t.Errorf("%s: IsNetworkActionDenied = %q, %v; want a denial naming the reason", tc.kind, r, d)
		}
		if f := ClassifyFileWrite(tc.line); f == nil || !strings.Contains(f.Reason, tc.reason) {
			t.Errorf("%s: ClassifyFileWrite = %v; want a finding naming the reason", tc.kind, f)
		}
		// With no rules there is nothing to deny.
		if _, denied := IsProgramDenied(tc.line, nil); denied {
			t.Errorf("%s: denied with no rules", tc.kind)
		}
	}
}

func TestIsProgramDeniedRules(t *testing.T) {
	cases := []struct {
		line  string
		rules []string
		want  string
	}{
		{"git push", []string{"git"}, "git"},
		{"git status", []string{"git"}, "git"},
		{"git status", []string{"git:push"}, ""},
		{"GIT push", []string{"Git:Push"}, "Git:Push"},
		{"gh pr create", []string{"gh:pr"}, "gh:pr"},
		{"gh pr view", []string{"gh:pr:create"}, ""},
		{"gh pr", []string{"gh:pr:create"}, ""},
		{"git stash push", []string{"git:push"}, ""},
		{"git stash push", []string{"git:stash:push"}, "git:stash:push"},
		{"git st", []string{"git:push"}, "git:push"},             // unknown subcommand (alias): fail closed
		{"gh xyz run", []string{"gh:pr:create"}, "gh:pr:create"}, // unknown gh word (extension)
		{"which git", []string{"git"}, ""},
		{"echo git push", []string{"git"}, ""},
		{"ls", []string{"git:push", "ls"}, "ls"},
		{"git push", []string{"", ":"}, ""},
		{"git push origin", []string{"git:push:origin"}, ""}, // chains hold subcommands, not arguments
	}
	for _, tc := range cases {
		got, denied := IsProgramDenied(tc.line, tc.rules)
		if got != tc.want || denied != (tc.want != "") {
			t.Errorf("IsProgramDenied(%q, %q) = %q, %v; want %q", tc.line, tc.rules, got, denied, tc.want)
		}
	}
}

func TestIsBashDenied(t *testing.T) {
	cases := []struct {
		line     string
		patterns []string
		want     string
	}{
		{"rm -rf /", []string{"rm -rf"}, "rm -rf"},
		{"git push --force origin", []string{"--force", "push"}, "--force"},
		{"git status", []string{"push"}, ""},
		{"g''it push", []string{"git push"}, ""}, // substring semantics on the raw text, as the bounds SDK has it
		{"anything", nil, ""},
	}
	for _, tc := range cases {
		got, denied := IsBashDenied(tc.line, tc.patterns)
		if got != tc.want || denied != (tc.want != "") {
			t.Errorf("IsBashDenied(%q, %q) = %q, %v; want %q", tc.line, tc.patterns, got, denied, tc.want)
		}
	}
}

func TestIsNetworkActionDenied(t *testing.T) {
	cases := []struct {
		line    string
		actions []string
		want    string
	}{
		{"git push", []string{"write"}, "git:push"},
		{"git push", []string{"git:push"}, "git:push"},
		{"git push", []string{"read"}, ""},
		{"git fetch", []string{"read"}, "git:fetch"},
		{"git fetch", []string{"all"}, "git:fetch"},
		{"curl -d x https://a.example", []string{"write"}, "http:write"},
		{"curl https://a.example", []string{"write"}, ""},
		{"curl https://a.example", []string{"http:read"}, "http:read"},
		{"scp f h:/x", []string{"ssh:write"}, "ssh:write"},
		{"dig a.example", []string{"read"}, "dns"},
		{"nc h 1", []string{"git:push"}, "git:push"},
		{"git status", []string{"all"}, ""},
		{"sudo git push", []string{"write"}, "git:push"},
		{"git push", nil, ""},
	}
	for _, tc := range cases {
		got, denied := IsNetworkActionDenied(tc.line, tc.actions)
		if got != tc.want || denied != (tc.want != "") {
			t.Errorf("IsNetworkActionDenied(%q, %q) = %q, %v; want %q", tc.line, tc.actions, got, denied, tc.want)
		}
	}
}

// ClassifyNetworkActions works from a Classification built by hand (only
// Argvs) and from the raw command alone.
func TestClassifyNetworkActionsInputs(t *testing.T) {
	manual := Classification{Argvs: [][]string{{"git", "-C", "x", "push"}, {"curl", "-X", "PUT", "u"}}}
	if got, want := ClassifyNetworkActions(manual, ""), []string{"git:push", "http:write"}; !slices.Equal(got, want) {
		t.Errorf("from Argvs: %q, want %q", got, want)
	}
	if got, want := ClassifyNetworkActions(Classification{}, "git fetch && ssh h"), []string{"git:fetch", "ssh:read"}; !slices.Equal(got, want) {
		t.Errorf("from raw: %q, want %q", got, want)
	}
}

func TestClassifyFields(t *testing.T) {
	c := Classify(`FOO=1 sudo -u x git -C "/a b" push origin && gh pr create -t 't' && echo $(date)`)
	want := [][]string{{"sudo", "-u", "x", "git", "-C", "/a b", "push", "origin"}, {"git", "-C", "/a b", "push", "origin"}, {"gh", "pr", "create", "-t", "t"}, {"echo", "$(date)"}, {"date"}}
	if !slices.EqualFunc(c.Argvs, want, slices.Equal) {
		t.Errorf("Argvs = %q, want %q", c.Argvs, want)
	}
	if got := c.Subcommands; !slices.Equal(got["git"], []string{"push"}) || !slices.Equal(got["gh"], []string{"pr:create"}) || len(got) != 2 {
		t.Errorf("Subcommands = %v", got)
	}
	if !slices.Equal(c.Opaque, []string{"git"}) {
		t.Errorf("Opaque = %q", c.Opaque)
	}
}

func TestRuleNormalization(t *testing.T) {
	for _, r := range []string{"/usr/bin/git:push", "GIT:push", "git.exe:push"} {
		if got, ok := IsProgramDenied("git push", []string{r}); !ok || got != r {
			t.Errorf("rule %q: got %q, %v", r, got, ok)
		}
	}
}

// TestTwinChains: a rule on git's porcelain denies the plumbing and the
// extensions that do the same (send-pack, http-push and lfs push push;
// fetch-pack and lfs fetch fetch), and nothing else.
func TestTwinChains(t *testing.T) {
	for _, c := range []struct {
		line, rule string
		denied     bool
	}{
		{"git send-pack origin main", "git:push", true},
		{"git http-push https://x.test/r.git main", "git:push", true},
		{"git lfs push origin main", "git:push", true},
		{"git fetch-pack origin", "git:fetch", true},
		{"git lfs fetch origin", "git:fetch", true},
		{"git lfs pull", "git:pull", true},
		{"git lfs push origin main", "git:fetch", false},
		{"git send-pack origin main", "git:fetch", false},
		{"git lfs ls-files", "git:push", false},
	} {
		if _, denied := IsProgramDenied(c.line, []string{c.rule}); denied != c.denied {
			t.Errorf("%q under %s: denied %v, want %v", c.line, c.rule, denied, c.denied)
		}
	}
}
