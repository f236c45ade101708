package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWorkedExample is the worked example of Barry's policy-resolution page
// (examples/ops.yaml): the
// session sees exactly github:list_issues and slack:read_channel.
func TestWorkedExample(t *testing.T) {
	r, err := ResolveFile("../examples/ops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantTools := []ToolAccess{{ID: "github:list_issues", Access: AccessRead}, {ID: "slack:read_channel", Access: AccessRead}}
	if diff := cmp.Diff(wantTools, r.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	wantWithheld := []WithheldTool{
		{ID: "github:create_issue", Reason: "readonly denies write access"},
		{ID: "slack:post_message", Reason: "readonly applies to the whole session: it denies write access"},
	}
	if diff := cmp.Diff(wantWithheld, r.Withheld); diff != "" {
		t.Errorf("withheld (-want +got):\n%s", diff)
	}
	if got := strings.Join(r.Traits, ","); got != "artifacts,bash,filesystem,github,github:read,instructions,sessions,slack" {
		t.Errorf("traits = %s", got)
	}
	// The union of readonly and no-network-write equals readonly.
	got, _ := json.Marshal(r.Bound)
	if !strings.Contains(string(got), `"deniedAccess":["write"],"deniedTools":["Bash","Edit","Write"]`) || !strings.Contains(string(got), `"network":{"actions":["write"]}`) {
		t.Errorf("bound = %s", got)
	}
	// The default traits pass the same filter: bash goes, file reads stay.
	if !contains(r.Native.Denied, "Bash") || !contains(r.Native.Denied, "Write") || !contains(r.Native.Allowed, "Read") {
		t.Errorf("native = %+v", r.Native)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings = %v", r.Warnings)
	}
	if len(r.Fingerprint) != 64 || r.Fingerprint != r.Scope.Fingerprint {
		t.Error("fingerprint")
	}
	// The JSON has the documented keys.
	var m map[string]any
	raw, _ := json.Marshal(r)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"traits", "tools", "withheld", "bound", "native", "warnings", "fingerprint"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	native := m["native"].(map[string]any)
	for _, k := range []string{"allowed", "denied", "refused", "uncontrolled"} {
		if _, ok := native[k]; !ok {
			t.Errorf("native JSON lacks %q", k)
		}
	}
}

const base = "version: 1\nharness: claude-code\n"

// sessionCases are the specification of policy-file resolution: a document
// and either a check on the result or the exact first error line.
var sessionCases = []struct {
	name    string
	doc     string
	wantErr string
	check   func(t *testing.T, r *Resolved)
}{
	{name: "minimal", doc: base, check: func(t *testing.T, r *Resolved) {
		if strings.Join(r.Traits, ",") != "artifacts,bash,filesystem,instructions,sessions" || r.Bound != nil || r.Mode != "hosted" {
			t.Errorf("%+v", r)
		}
	}},
	{name: "misspelled field", doc: base + "bounds:\n  readonly:\n    network: {actoins: [write]}\n", wantErr: "5:15: bounds.readonly.network.actoins: unknown field"},
	{name: "missing version", doc: "harness: claude-code\n", wantErr: "1:1: version: missing required field (version: 1)"},
	{name: "bad version", doc: "version: 2\nharness: claude-code\n", wantErr: "1:10: version: unsupported version 2 (this build reads version 1)"},
	{name: "unknown harness", doc: "version: 1\nharness: vim\n", wantErr: `2:10: harness: unknown harness "vim" (one of claude-code, codex, copilot, cursor, gemini, pi)`},
	{name: "unknown mode", doc: base + "mode: turbo\n", wantErr: `3:7: mode: harness claude-code has no mode "turbo" (modes: guest, hosted, instrumented)`},
	{name: "unknown session trait", doc: base + "session: {traits: [nope]}\n", wantErr: `session.traits[0]: unknown trait: "nope"`},
	{name: "unknown identity trait", doc: base + "identity: {name: x, traits: [nope]}\n", wantErr: `identity.traits[0]: unknown trait: "nope"`},
	{name: "unknown named bound", doc: base + "session: {bounds: [nope]}\n", wantErr: `session.bounds[0]: unknown bound: "nope"`},
	{name: "unknown identity bound", doc: base + "identity: {name: x, bounds: [nope]}\n", wantErr: `identity.bounds[0]: unknown bound: "nope"`},
	{name: "cycle", doc: base + "traits:\n  a: {includes: [b]}\n  b: {includes: [a]}\nsession: {traits: [a]}\n", wantErr: "traits: trait include cycle: a -> b -> a"},
	{name: "no harness branch", doc: base + "traits:\n  coding: {harnessTraits: {codex: x}}\n  x: {}\nsession: {traits: [coding]}\n",
		wantErr: `traits: trait has no branch for harness: trait "coding" has branches for codex, not for harness claude-code`},
	{name: "harness branch taken", doc: "version: 1\nharness: codex\ntraits:\n  coding: {harnessTraits: {codex: x}}\n  x: {access: readwrite, namespaces: [git]}\nsession: {traits: [coding]}\ntools: [{namespace: git, toolName: push, access: write}]\n",
		check: func(t *testing.T, r *Resolved) {
			if len(r.Tools) != 1 || r.Tools[0].ID != "git:push" {
				t.Errorf("tools = %+v", r.Tools)
			}
		}},
	{name: "optional base default", doc: base + "identity: {name: x, optional: [bash]}\n", check: func(t *testing.T, r *Resolved) {
		if contains(r.Traits, "bash") || !contains(r.Native.Denied, "Bash") {
			t.Errorf("bash still granted: %+v", r.Traits)
		}
	}},
	{name: "bad optional", doc: base + "identity: {name: x, optional: [github]}\n", wantErr: `3:11: identity.optional[0]: "github" is not a base default trait (one of artifacts, bash, filesystem, instructions, sessions)`},
	{name: "base default that does not resolve is dropped with a warning", doc: base + "traits:\n  bash: {includes: [missing]}\n", check: func(t *testing.T, r *Resolved) {
		if contains(r.Traits, "bash") || len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], `base default trait "bash" does not resolve and grants nothing`) {
			t.Errorf("traits %v warnings %q", r.Traits, r.Warnings)
		}
	}},
	{name: "packed bags are not grants", doc: base + "bags: {gh: {namespaces: [github]}}\nidentity: {name: x, bags: [gh]}\ntools: [{namespace: github, toolName: a, access: read}]\n",
		check: func(t *testing.T, r *Resolved) {
			if len(r.Tools) != 0 || len(r.Withheld) != 1 {
				t.Errorf("tools %+v", r.Tools)
			}
		}},
	{name: "bagGrant identity", doc: base + "bags: {gh: {namespaces: [github], bags: [sub]}, sub: {namespaces: [subns]}}\nidentity: {name: x, bags: [gh], bagGrant: identity}\ntools: [{namespace: github, toolName: a, access: write}, {namespace: subns, toolName: b, access: read}]\n",
		check: func(t *testing.T, r *Resolved) {
			if len(r.Tools) != 2 || !contains(r.Traits, "gh") {
				t.Errorf("tools %+v traits %v", r.Tools, r.Traits)
			}
		}},
	{name: "no automatic trait for extends or services-only bags", doc: base + "bags: {base: {namespaces: [b]}, ext: {namespaces: [e], extends: base}, svc: {services: [x]}}\nidentity: {name: x, bags: [ext, svc]}\nsession: {traits: [ext]}\n",
		wantErr: `session.traits[0]: unknown trait: "ext"`},
	{name: "bag trait replaces automatic read trait", doc: base + "bags: {gh: {namespaces: [github], traits: {read: {access: read, namespaces: [github]}}}}\nidentity: {name: x, bags: [gh]}\nsession: {traits: [\"gh:read\"]}\ntools: [{namespace: github, toolName: a, access: read}]\n",
		check: func(t *testing.T, r *Resolved) {
			if r.Bound != nil || len(r.Tools) != 1 {
				t.Errorf("replacement read trait must not carry readonly: %+v", r.Bound)
			}
		}},
	{name: "bag:read carries readonly for the whole session", doc: base + "bags: {gh: {namespaces: [github]}}\nidentity: {name: x, bags: [gh]}\nsession: {traits: [\"gh:read\"]}\n",
		check: func(t *testing.T, r *Resolved) {
			if r.Bound == nil || !contains(r.Bound.DeniedAccess, "write") {
				t.Errorf("bound %+v", r.Bound)
			}
		}},
	{name: "six bound sources merge", doc: base + "traits:\n  t: {bound: {deniedTools: [t1]}, boundNames: [nb]}\nbounds:\n  nb: {deniedTools: [t2]}\n  ib: {deniedTools: [t3]}\n  sb: {deniedTools: [t4]}\nidentity: {name: x, traits: [t], bounds: [ib], bound: {deniedTools: [t5]}}\nsession: {bounds: [sb], bound: {deniedTools: [t6]}}\n",
		check: func(t *testing.T, r *Resolved) {
			if strings.Join(r.Bound.DeniedTools, ",") != "t1,t2,t3,t4,t5,t6" {
				t.Errorf("deniedTools = %v", r.Bound.DeniedTools)
			}
		}},
	{name: "allowDomains needs sandbox in a bound", doc: base + "session: {bound: {network: {allowDomains: [a.com]}}}\n", wantErr: "3:43: session.bound.network.allowDomains: " + AllowDomainsNeedsSandbox},
	{name: "sandbox allowlists intersect", doc: base + "identity: {name: x, bound: {network: {enforce: sandbox, allowDomains: ['*.a.com', b.com]}}}\nsession: {bound: {network: {enforce: sandbox, allowDomains: [api.a.com]}}}\n",
		check: func(t *testing.T, r *Resolved) {
			if strings.Join(r.Bound.Network.AllowDomains, ",") != "api.a.com" || r.Bound.Network.Enforce != EnforceSandbox {
				t.Errorf("network = %+v", r.Bound.Network)
			}
		}},
	{name: "native name not offered by harness", doc: base + "traits:\n  t: {nativeTools: {claude-code: [shell, apply_patch]}}\n", wantErr: `traits.t.nativeTools.claude-code[1]: "apply_patch" is not a native tool or category of harness claude-code`},
	{name: "native harness unknown", doc: base + "traits:\n  t: {nativeTools: {vim: [x]}}\n", wantErr: `traits.t.nativeTools.vim: unknown harness "vim"`},
	{name: "guest mode takes back under guards", doc: base + "mode: guest\nsession: {bound: {bash: {denyPrograms: [\"git:push\"]}}}\n",
		check: func(t *testing.T, r *Resolved) {
			if !contains(r.Native.Denied, "Bash") {
				t.Errorf("native %+v", r.Native)
			}
		}},
	{name: "tool missing fields", doc: base + "tools: [{namespace: a}]\n", wantErr: "3:9: tools[0].access: missing required field"},
	{name: "tool bad access", doc: base + "tools: [{namespace: a, toolName: b, access: readwrite}]\n", wantErr: `3:45: tools[0].access: "readwrite" is not a tool access (read or write)`},
	{name: "duplicate tool", doc: base + "tools: [{namespace: a, toolName: b, access: read}, {namespace: a, toolName: b, access: read}]\n", wantErr: "3:52: tools[1]: duplicate tool a:b"},
	{name: "trait without access", doc: base + "traits:\n  t: {namespaces: [a]}\n", wantErr: "4:6: traits.t.access: missing required field (read or readwrite) for a trait that grants namespaces or tools"},
	{name: "trait bad access", doc: base + "traits:\n  t: {access: write, namespaces: [a]}\n", wantErr: `4:15: traits.t.access: "write" is not an access level (read or readwrite)`},
	{name: "bagGrant bad", doc: base + "identity: {name: x, bagGrant: all}\n", wantErr: `3:31: identity.bagGrant: "all" is not a bag grant (session or identity)`},
	{name: "identity unknown bag", doc: base + "identity: {name: x, bags: [gh]}\n", wantErr: `3:11: identity.bags[0]: unknown bag "gh" (declare it under bags)`},
	{name: "legacy bare tool warns", doc: base + "traits:\n  t: {access: read, tools: [status]}\nsession: {traits: [t]}\ntools: [{namespace: git, toolName: status, access: read}, {namespace: sys, toolName: status, access: read}]\n",
		check: func(t *testing.T, r *Resolved) {
			if len(r.Tools) != 2 || len(r.Warnings) != 1 {
				t.Errorf("tools %+v warnings %v", r.Tools, r.Warnings)
			}
		}},
	{name: "qualified tool admits one namespace", doc: base + "traits:\n  t: {access: read, tools: [\"git:status\"]}\nsession: {traits: [t]}\ntools: [{namespace: git, toolName: status, access: read}, {namespace: sys, toolName: status, access: read}]\n",
		check: func(t *testing.T, r *Resolved) {
			if len(r.Tools) != 1 || r.Tools[0].ID != "git:status" {
				t.Errorf("tools %+v", r.Tools)
			}
		}},
	{name: "json document", doc: `{"version": 1, "harness": "pi", "session": {"bound": {"deniedTools": ["bash"]}}}`, check: func(t *testing.T, r *Resolved) {
		if r.Harness != "pi" || !contains(r.Native.Denied, "bash") {
			t.Errorf("%+v", r.Native)
		}
	}},
}

func TestResolveSessionTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range sessionCases {
		if seen[c.doc] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.doc] = true
		t.Run(c.name, func(t *testing.T) {
			format := FormatYAML
			if strings.HasPrefix(c.doc, "{") {
				format = FormatJSON
			}
			pf, err := DecodePolicyFile([]byte(c.doc), format)
			var r *Resolved
			if err == nil {
				r, err = ResolveSession(pf)
			}
			if c.wantErr != "" {
				var fes FieldErrors
				if !errors.As(err, &fes) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if fes[0].Error() != c.wantErr {
					t.Fatalf("first error\n got %q\nwant %q", fes[0].Error(), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(p, []byte("version: 1\nharness: pi\n"), 0o644)
	if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("YAML in a .json file: %v", err)
	}
	if _, err := ResolveSession(nil); err == nil {
		t.Error("nil policy resolved")
	}
}

func TestCheckSandboxEnforceable(t *testing.T) {
	cases := []struct {
		b  *Bound
		ok bool
	}{
		{nil, true},
		{&Bound{Network: &NetworkRules{Enforce: EnforceSandbox}}, true},
		{&Bound{Network: &NetworkRules{Enforce: EnforceSandbox, Actions: []string{"all"}}}, true},
		{&Bound{Network: &NetworkRules{Enforce: EnforceSandbox, Actions: []string{"read", "write"}}}, true},
		{&Bound{Network: &NetworkRules{Enforce: EnforceSandbox, Actions: []string{"write"}}}, false},
		{&Bound{Network: &NetworkRules{Enforce: EnforceGuard, Actions: []string{"write"}}}, true},
	}
	for _, c := range cases {
		if err := CheckSandboxEnforceable(c.b); (err == nil) != c.ok {
			t.Errorf("CheckSandboxEnforceable(%+v) = %v", c.b, err)
		}
	}
}

// FuzzDecodePolicyFile checks that decoding and resolving never panic and
// that every refusal wraps ErrInvalidPolicy or a resolution error.
func FuzzDecodePolicyFile(f *testing.F) {
	for _, c := range sessionCases {
		f.Add(c.doc)
	}
	if b, err := os.ReadFile("../examples/ops.yaml"); err == nil {
		f.Add(string(b))
	}
	f.Add("version: 1\nharness: claude-code\ncredentials:\n  - {env: GITHUB_TOKEN, hosts: [github.com, API.github.com.]}\n  - {env: NPM_TOKEN, hosts: [registry.npmjs.org], file: ../npm}\n")
	f.Add("version: 1\nharness: codex\ncredentials: [{env: A, hosts: ['*.x', 'b:1', 7, ''], file: '~x'}, {env: A, hosts: []}, {}]\n")
	f.Add("version: 1\nharness: pi\ncredentials: [{env: A, hosts: [a.test], headers: [x-amz-meta-k, X-AMZ-META-K, Host, 'a b', te, 1]}, {env: B, hosts: [b.test], headers: [private-token]}]\n")
	f.Add("version: 1\nharness: claude-code\nsandbox: {proc: fresh}\n")
	f.Add("version: 1\nharness: codex\nsandbox: {proc: [any], x: 1}\n")
	f.Add("version: 1\nharness: claude-code\nfilesystem: {write: [out], allowEdit: [.vscode/settings.json, .envrc]}\n")
	f.Add("version: 1\nharness: claude-code\nfilesystem: {allowEdit: [.git/config, 3, [x], '']}\n")
	f.Add("version: 1\nharness: claude-code\nfilesystem: {openGate: always}\n")
	f.Add("version: 1\nharness: claude-code\nfilesystem: {openGate: [auto], write: []}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		pf, err := DecodePolicyFile([]byte(doc), FormatYAML)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("decode error %v does not wrap ErrInvalidPolicy", err)
			}
			return
		}
		checkCredentialsDecoded(t, pf.Credentials)
		if pf.Filesystem != nil {
			for _, e := range pf.Filesystem.AllowEdit {
				if ValidateAllowEdit(e) != nil {
					t.Fatalf("allowEdit %q decoded, though not a protected name", e)
				}
			}
			if g := pf.Filesystem.OpenGate; g != "" && g != OpenGateAuto && g != OpenGateAlways {
				t.Fatalf("openGate %q decoded, though not a mode", g)
			}
		}
		r, err := ResolveSession(pf)
		if err != nil {
			return
		}
		if r.Bound != nil && r.Bound.Network != nil && r.Bound.Network.AllowDomains != nil && r.Bound.Network.Enforce != EnforceSandbox {
			t.Fatal("resolved an allowlist without the sandbox")
		}
		if len(r.Fingerprint) != 64 {
			t.Fatal("no fingerprint")
		}
	})
}

func TestDeniesAllActions(t *testing.T) {
	cases := []struct {
		actions []string
		want    bool
	}{
		{nil, false},
		{[]string{}, false},
		{[]string{ActionAll}, true},
		{[]string{ActionRead, ActionWrite}, true},
		{[]string{ActionWrite, ActionRead, ActionGitPush}, true},
		{[]string{ActionWrite}, false},
		{[]string{ActionRead}, false},
		{[]string{ActionGitPush, ActionHTTPRead}, false},
	}
	for _, c := range cases {
		if got := DeniesAllActions(c.actions); got != c.want {
			t.Errorf("DeniesAllActions(%q) = %v, want %v", c.actions, got, c.want)
		}
	}
}

// TestForLaunch: a Codex session whose bound has a network rule cannot
// launch behind a bare hook gate (web_search runs without a hook), and can
// under sandboxd launch, which takes web_search back in Codex's
// configuration; the resolution it came from is unchanged.
func TestForLaunch(t *testing.T) {
	pf, err := DecodePolicyFile([]byte("version: 1\nharness: codex\nsession:\n  traits: [web]\n  bound: {network: {domains: [pastebin.com]}}\n"), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckLaunchable(); err == nil || !strings.Contains(err.Error(), "web_search") {
		t.Fatalf("CheckLaunchable = %v, want a refusal naming web_search", err)
	}
	l, err := r.ForLaunch()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckLaunchable(); err != nil {
		t.Errorf("launched: %v", err)
	}
	if !slices.Contains(l.Native.Denied, "web_search") || slices.Contains(l.Native.Allowed, "web_search") {
		t.Errorf("launched native policy: %+v", l.Native)
	}
	if len(r.Native.Refused) == 0 {
		t.Error("ForLaunch changed the resolution it came from")
	}
}

// TestLaunchRefusesWhatNothingTakesBack: under a launch, a tool the bound
// needs gone that neither the mode's gate nor the launch's configuration
// can take back refuses the session, naming the tool. No launched mode of
// the catalog has such a tool today (Codex's hosted web search is the
// launch's to turn off), so the catalog's Codex is taken without its
// launch ceiling.
func TestLaunchRefusesWhatNothingTakesBack(t *testing.T) {
	pf, err := DecodePolicyFile([]byte("version: 1\nharness: codex\nsession:\n  traits: [web]\n  bound: {network: {domains: [pastebin.com]}}\n"), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	h := *harnessCatalog()["codex"]
	mode := *h.Modes["hooks"]
	mode.LaunchCeiling = nil
	h.Modes = map[string]*HarnessMode{"hooks": &mode}
	native, err := ResolveNativePolicy(NativeGrants{Grants: r.grants, Bound: r.Bound, Launch: true}, &h, "hooks")
	if err != nil {
		t.Fatal(err)
	}
	l := *r
	l.Native = native
	if err := l.CheckLaunchable(); err == nil || !strings.Contains(err.Error(), "web_search") {
		t.Errorf("CheckLaunchable = %v, want a refusal naming web_search", err)
	}
}

// TestResolveNoFingerprint: NoFingerprint changes nothing but the
// fingerprint, which it leaves empty.
func TestResolveNoFingerprint(t *testing.T) {
	for _, f := range []string{"../examples/ops.yaml", "../hooks/testdata/policies/guarded.yaml", "../hooks/testdata/policies/open.yaml"} {
		full, err := ResolveFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lean, err := ResolveFileWith(f, ResolveOptions{NoFingerprint: true})
		if err != nil {
			t.Fatal(err)
		}
		if full.Fingerprint == "" || lean.Fingerprint != "" || lean.Scope.Fingerprint != "" {
			t.Fatalf("%s: fingerprints %q and %q", f, full.Fingerprint, lean.Fingerprint)
		}
		lean.Fingerprint, lean.Scope.Fingerprint = full.Fingerprint, full.Scope.Fingerprint
		if !reflect.DeepEqual(full, lean) {
			t.Errorf("%s: NoFingerprint changed the resolution:\n%s", f, cmp.Diff(full, lean, cmp.AllowUnexported(Resolved{})))
		}
	}
}
