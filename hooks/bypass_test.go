package hooks

import (
	"context"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// bypassCases: tool calls the harness runs differently from how the engine
// first read them, found by the session-2 hook audit. Each was allowed.
var bypassCases = []struct {
	name    string
	session Session
	// fold rules as on a case-insensitive filesystem (macOS).
	fold bool
	call Call
	want policy.Decision
}{
	{"a **/ deny pattern after cd elsewhere",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"Read"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Read", Input: map[string]any{"file_path": "/w/proj/.env"}, Cwd: "/tmp"},
		policy.Denied(`file denied: /w/proj/.env matches files.deny "**/.env*"`, "files.deny:**/.env*")},
	{"a search over the project after cd elsewhere",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "KEY", "path": "/w/proj"}, Cwd: "/tmp"},
		policy.Decision{Verdict: policy.Allow, Reason: `search leaves out what files.deny matches below its root: Grep below /w/proj leaves out files.deny "**/.env*" (!**/.env*)`, Rule: "files.deny:**/.env*", Exclude: "!**/.env*"}},
	{"a search that re-includes what its exclusion left out",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "KEY", "path": "/w/proj", "glob": "!**/.env* **/.env"}, Cwd: "/w/proj"},
		policy.Decision{Verdict: policy.Allow, Reason: `search leaves out what files.deny matches below its root: Grep below /w/proj leaves out files.deny "**/.env*" (!**/.env*)`, Rule: "files.deny:**/.env*", Exclude: "!**/.env*"}},
	{"a search whose glob splits otherwise in Go and JavaScript (U+0085)",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "KEY", "path": "/w/proj", "glob": "**/.env,\u0085!**/.env*"}, Cwd: "/w/proj"},
		policy.Denied(`search root reaches denied files: Grep below /w/proj could reach files.deny "**/.env*"`, "files.deny:**/.env*")},
	{"a search over home when files.deny is the home directory",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"~"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "KEY", "path": "/w/nothome"}, Cwd: "/w"},
		policy.Denied(`search root reaches denied files: Grep below /w/nothome could reach files.deny "~"`, "files.deny:~")},
	{"a search with the exclusion last, as the rewrite makes it",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "KEY", "path": "/w/proj", "glob": "**/.env,*.go !**/.env*"}, Cwd: "/w/proj"},
		policy.Decision{Verdict: policy.Allow, Reason: `search leaves out what files.deny matches below its root: Grep below /w/proj leaves out files.deny "**/.env*" (!**/.env*)`, Rule: "files.deny:**/.env*"}},
	{"pi read of an @-mention path",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"~/.ssh"}}}, Native: NativePolicy{Allowed: []string{"read"}}},
		false,
		Call{Harness: Pi, Event: "tool_call", Kind: KindTool, Tool: "read", Input: map[string]any{"path": "@~/.ssh/id_rsa"}, Cwd: "/w/proj"},
		policy.Denied(`file denied: /home/dev/.ssh/id_rsa matches files.deny "~/.ssh"`, "files.deny:~/.ssh")},
	{"pi write with a no-break space",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/my notes"}}}, Native: NativePolicy{Allowed: []string{"write"}}},
		false,
		Call{Harness: Pi, Event: "tool_call", Kind: KindTool, Tool: "write", Input: map[string]any{"path": "/w/proj/my\u00a0notes/k", "content": "x"}, Cwd: "/w/proj"},
		policy.Denied(`file denied: /w/proj/my notes/k matches files.deny "/w/proj/my notes"`, "files.deny:/w/proj/my notes")},
	{"read_many_files climbing after a wildcard",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{AllowOnly: []string{"/w/proj/**"}}}, Native: NativePolicy{Allowed: []string{"read_many_files"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "read_many_files", Input: map[string]any{"paths": []any{"/w/proj/*/../../etc/passwd"}}, Cwd: "/w/proj"},
		policy.Denied("file not in the allowlist: / is outside files.allowOnly", "files.allowOnly")},
	{"read_many_files climbing through braces",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{AllowOnly: []string{"/w/proj/**"}}}, Native: NativePolicy{Allowed: []string{"read_many_files"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "read_many_files", Input: map[string]any{"paths": []any{"/w/proj/{..,x}/etc/passwd"}}, Cwd: "/w/proj"},
		policy.Denied("file not in the allowlist: / is outside files.allowOnly", "files.allowOnly")},
	{"read_many_files into a denied directory through braces",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/secret"}}}, Native: NativePolicy{Allowed: []string{"read_many_files"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "read_many_files", Input: map[string]any{"paths": []any{"/w/proj/{secret,x}/k"}}, Cwd: "/w/proj"},
		policy.Denied(`search root reaches denied files: read_many_files below /w/proj could reach files.deny "/w/proj/secret"`, "files.deny:/w/proj/secret")},
	{"gemini glob with an absolute brace alternative",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{AllowOnly: []string{"/w/proj/**"}}}, Native: NativePolicy{Allowed: []string{"glob"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "glob", Input: map[string]any{"pattern": "{/etc,x}/passwd", "dir_path": "/w/proj"}, Cwd: "/w/proj"},
		policy.Denied("file not in the allowlist: / is outside files.allowOnly", "files.allowOnly")},
	{"claude Glob climbing after a wildcard",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{AllowOnly: []string{"/w/proj/**"}}}, Native: NativePolicy{Allowed: []string{"Glob"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Glob", Input: map[string]any{"pattern": "*/../../../etc/passwd"}, Cwd: "/w/proj"},
		policy.Denied("file not in the allowlist: / is outside files.allowOnly", "files.allowOnly")},
	{"gemini search include climbing out",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{AllowOnly: []string{"/w/proj/**"}}}, Native: NativePolicy{Allowed: []string{"search_file_content"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "search_file_content", Input: map[string]any{"pattern": "root", "include": "../../etc/*"}, Cwd: "/w/proj"},
		policy.Denied("file not in the allowlist: /etc is outside files.allowOnly", "files.allowOnly")},
	{"gemini web_fetch URL read to the next space",
		Session{Bound: &policy.Bound{Network: &policy.NetworkRules{AllowDomains: []string{"allowed.example"}}}, Native: NativePolicy{Allowed: []string{"web_fetch"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "web_fetch", Input: map[string]any{"prompt": `summarize https://allowed.example"@evil.net/x`}, Cwd: "/w/proj"},
		policy.Denied(`not an http(s) URL with a host: web_fetch URL "https://allowed.example\"@evil.net/x"`, "input")},
	{"gemini web_fetch URL without slashes after its scheme",
		Session{Bound: &policy.Bound{Network: &policy.NetworkRules{AllowDomains: []string{"allowed.example"}}}, Native: NativePolicy{Allowed: []string{"web_fetch"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "web_fetch", Input: map[string]any{"prompt": `compare https://allowed.example/ with https:\\evil.net/?://`}, Cwd: "/w/proj"},
		policy.Denied(`not an http(s) URL with a host: web_fetch URL "https:\\\\evil.net/?://"`, "input")},
	{"gemini web_fetch of a GitHub blob fetches raw.githubusercontent.com",
		Session{Bound: &policy.Bound{Network: &policy.NetworkRules{Domains: []string{"raw.githubusercontent.com"}}}, Native: NativePolicy{Allowed: []string{"web_fetch"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "web_fetch", Input: map[string]any{"prompt": "summarize https://github.com/a/b/blob/main/x.md"}, Cwd: "/w/proj"},
		policy.Denied(`denied domain: raw.githubusercontent.com matches network.domains entry "raw.githubusercontent.com"`, "network.domains:raw.githubusercontent.com")},
	{"apply_patch header with leading space",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"**/.env*"}}}, Native: NativePolicy{Allowed: []string{"apply_patch"}}},
		false,
		Call{Harness: Codex, Event: "PreToolUse", Kind: KindTool, Tool: "apply_patch", Cwd: "/w/proj",
			Input: map[string]any{"command": "*** Begin Patch\n*** Add File: ok.txt\n+a\n *** Add File: .env\n+K=v\n*** End Patch\n"}},
		policy.Denied(`file denied: /w/proj/.env matches files.deny "**/.env*"`, "files.deny:**/.env*")},
	{"read through /proc/self/cwd",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/secret"}}}, Native: NativePolicy{Allowed: []string{"Read"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Read", Input: map[string]any{"file_path": "/proc/self/cwd/secret/k"}, Cwd: "/w/proj"},
		policy.Denied("path through another process's view of the filesystem (/proc/<pid>, /proc/self, /dev/fd) under files rules: Read path /proc/self/cwd/secret/k", "files")},
	{"search below /proc/thread-self/cwd",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/secret"}}}, Native: NativePolicy{Allowed: []string{"LS"}}},
		false,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "LS", Input: map[string]any{"path": "/proc/thread-self/cwd/secret"}, Cwd: "/w/proj"},
		policy.Denied("path through another process's view of the filesystem (/proc/<pid>, /proc/self, /dev/fd) under files rules: LS path /proc/thread-self/cwd/secret", "files")},
	{"gemini shell with two working directories",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/secret"}}}, Native: NativePolicy{Allowed: []string{"run_shell_command"}}},
		false,
		Call{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "run_shell_command", Cwd: "/w/proj",
			Input: map[string]any{"command": "cat secret/k", "directory": "/tmp", "dir_path": "/w/proj"}},
		policy.Denied("tool input keys disagree: directory and dir_path", "input")},
	{"read in another case on a case-insensitive filesystem",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"~/.ssh"}}}, Native: NativePolicy{Allowed: []string{"Read"}}},
		true,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Read", Input: map[string]any{"file_path": "/home/dev/.SSH/id_rsa"}, Cwd: "/w/proj"},
		policy.Denied(`file denied: /home/dev/.SSH/id_rsa matches files.deny "~/.ssh"`, "files.deny:~/.ssh")},
	{"search root in another case on a case-insensitive filesystem",
		Session{Bound: &policy.Bound{Files: &policy.FileRules{Deny: []string{"/w/proj/secret/**"}}}, Native: NativePolicy{Allowed: []string{"Grep"}}},
		true,
		Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "k", "path": "/W/Proj"}, Cwd: "/w/proj"},
		policy.Denied(`search root reaches denied files: Grep below /W/Proj could reach files.deny "/w/proj/secret/**"`, "files.deny:/w/proj/secret/**")},
}

func TestBypasses(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range bypassCases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			s := tc.session
			s.Home = "/home/dev"
			e, err := NewEngine(&s, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.files.FoldCase = tc.fold
			if got := e.Rule(context.Background(), tc.call); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
