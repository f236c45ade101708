package policy

import (
	"encoding/json"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBoundHasContent(t *testing.T) {
	cases := []struct {
		name string
		b    *Bound
		want bool
	}{
		{"nil", nil, false},
		{"empty", &Bound{}, false},
		{"name and description only", &Bound{Name: "x", Description: "y"}, false},
		{"empty sections", &Bound{Bash: &BashRules{}, Files: &FileRules{}, Network: &NetworkRules{}, Nodes: &NodeRules{}}, false},
		{"enforce only", &Bound{Network: &NetworkRules{Enforce: EnforceSandbox}}, true},
		{"enforce guard only", &Bound{Network: &NetworkRules{Enforce: EnforceGuard}}, true},
		{"empty allowOnly", &Bound{Files: &FileRules{AllowOnly: []string{}}}, true},
		{"empty allowDomains", &Bound{Network: &NetworkRules{AllowDomains: []string{}, Enforce: EnforceSandbox}}, true},
		{"denied tool", &Bound{DeniedTools: []string{"Bash"}}, true},
		{"denied access", &Bound{DeniedAccess: []string{"write"}}, true},
		{"bash deny", &Bound{Bash: &BashRules{Deny: []string{"rm"}}}, true},
		{"deny program", &Bound{Bash: &BashRules{DenyPrograms: []string{"git:push"}}}, true},
		{"native tools", &Bound{NativeTools: map[string][]string{"codex": {"Bash"}}}, true},
		{"native tools empty list", &Bound{NativeTools: map[string][]string{"codex": {}}}, false},
		{"node allow empty", &Bound{Nodes: &NodeRules{Allow: []string{}}}, true},
		{"node deny", &Bound{Nodes: &NodeRules{Deny: []string{"n"}}}, true},
		{"network domains", &Bound{Network: &NetworkRules{Domains: []string{"a.com"}}}, true},
	}
	for _, c := range cases {
		if got := BoundHasContent(c.b); got != c.want {
			t.Errorf("%s: BoundHasContent = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMergeBounds(t *testing.T) {
	cases := []struct {
		name       string
		base, over *Bound
		want       string // JSON; "null" for nil
	}{
		{"nil nil", nil, nil, "null"},
		{"nil side", nil, &Bound{DeniedTools: []string{"b", "a", "a"}}, `{"deniedTools":["a","b"]}`},
		{"other nil side", &Bound{DeniedTools: []string{"a"}}, nil, `{"deniedTools":["a"]}`},
		{"denials union", &Bound{DeniedTools: []string{"Write"}, Bash: &BashRules{DenyPrograms: []string{"git:push"}}},
			&Bound{DeniedTools: []string{"Bash", "Write"}, Bash: &BashRules{Deny: []string{"rm -rf"}}},
			`{"bash":{"deny":["rm -rf"],"denyPrograms":["git:push"]},"deniedTools":["Bash","Write"]}`},
		{"allowOnly intersect", &Bound{Files: &FileRules{AllowOnly: []string{"/a/**", "/b/**"}}}, &Bound{Files: &FileRules{AllowOnly: []string{"/b/**", "/c/**"}}},
			`{"files":{"allowOnly":["/b/**"]}}`},
		{"allowOnly disjoint is empty, not absent", &Bound{Files: &FileRules{AllowOnly: []string{"/a/**"}}}, &Bound{Files: &FileRules{AllowOnly: []string{"/c/**"}}},
			`{"files":{"allowOnly":[]}}`},
		{"allowOnly one side", &Bound{Files: &FileRules{Deny: []string{"~/.ssh"}}}, &Bound{Files: &FileRules{AllowOnly: []string{"/w/**"}}},
			`{"files":{"allowOnly":["/w/**"],"deny":["~/.ssh"]}}`},
		{"allowDomains patterns intersect", &Bound{Network: &NetworkRules{AllowDomains: []string{"*.a.com", "b.com"}, Enforce: EnforceSandbox}},
			&Bound{Network: &NetworkRules{AllowDomains: []string{"api.a.com", "c.com"}, Enforce: EnforceSandbox}},
			`{"network":{"allowDomains":["api.a.com"],"enforce":"sandbox"}}`},
		{"allowDomains side without list imposes none", &Bound{Network: &NetworkRules{Domains: []string{"b.com"}, Enforce: EnforceGuard}},
			&Bound{Network: &NetworkRules{AllowDomains: []string{"API.A.COM."}, Enforce: EnforceSandbox}},
			`{"network":{"allowDomains":["api.a.com"],"domains":["b.com"],"enforce":"sandbox"}}`},
		{"allowDomains absent under sandbox is empty, so intersects to empty", &Bound{Network: &NetworkRules{Enforce: EnforceSandbox}},
			&Bound{Network: &NetworkRules{AllowDomains: []string{"API.A.COM."}, Enforce: EnforceSandbox}},
			`{"network":{"allowDomains":[],"enforce":"sandbox"}}`},
		{"strictest enforce", &Bound{Network: &NetworkRules{Enforce: EnforceGuard}}, &Bound{Network: &NetworkRules{Enforce: EnforceSandbox}},
			`{"network":{"enforce":"sandbox"}}`},
		{"strictest enforce reversed", &Bound{Network: &NetworkRules{Enforce: EnforceSandbox}}, &Bound{Network: &NetworkRules{Enforce: EnforceGuard}},
			`{"network":{"enforce":"sandbox"}}`},
		{"actions union", &Bound{Network: &NetworkRules{Actions: []string{"write"}}}, &Bound{Network: &NetworkRules{Actions: []string{"dns", "write"}}},
			`{"network":{"actions":["dns","write"]}}`},
		{"names joined sorted", &Bound{Name: "readonly"}, &Bound{Name: "no-network-write"}, `{"name":"no-network-write + readonly"}`},
		{"native tools union", &Bound{NativeTools: map[string][]string{"codex": {"Bash"}}}, &Bound{NativeTools: map[string][]string{"codex": {"apply_patch"}, "cursor": {"Shell"}}},
			`{"nativeTools":{"codex":["Bash","apply_patch"],"cursor":["Shell"]}}`},
		{"nodes", &Bound{Nodes: &NodeRules{Allow: []string{"a", "b"}, Deny: []string{"x"}}}, &Bound{Nodes: &NodeRules{Allow: []string{"b"}}},
			`{"nodes":{"allow":["b"],"deny":["x"]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			baseJSON, _ := json.Marshal(c.base)
			got, _ := json.Marshal(MergeBounds(c.base, c.over))
			if string(got) != c.want {
				t.Fatalf("MergeBounds\n got %s\nwant %s", got, c.want)
			}
			if after, _ := json.Marshal(c.base); string(after) != string(baseJSON) {
				t.Fatal("MergeBounds modified its input")
			}
		})
	}
}

func TestMergeNetwork(t *testing.T) {
	if MergeNetwork(nil, nil) != nil {
		t.Fatal("MergeNetwork(nil, nil) != nil")
	}
	got := MergeNetwork(&NetworkRules{Domains: []string{"*.internal.co"}}, nil)
	if diff := cmp.Diff(&NetworkRules{Domains: []string{"*.internal.co"}}, got); diff != "" {
		t.Fatal(diff)
	}
	got = MergeNetwork(&NetworkRules{AllowDomains: []string{"a.com"}, Enforce: EnforceSandbox}, &NetworkRules{AllowDomains: []string{"b.com"}})
	if got.AllowDomains == nil || len(got.AllowDomains) != 0 || got.Enforce != EnforceSandbox {
		t.Fatalf("disjoint allowlists must give an empty (non-nil) list under sandbox, got %+v", got)
	}
}

// decisions is what a bound decides on a fixed set of probes; the merge
// properties are stated over it.
type decisions map[string]bool // probe -> denied

var (
	probeTools   = []string{"Bash", "Write", "github", "github:create_issue"}
	probeAccess  = []string{"write", "github"}
	probeCmds    = []string{"rm -rf /", "git push"}
	probePaths   = []string{"/w/src/a.go", "/w/.env", "/home/u/.ssh/id_rsa", "/etc/passwd"}
	probeHosts   = []string{"a.com", "api.a.com", "x.api.a.com", "b.com", "10.0.0.1"}
	probeNodes   = []string{"n1", "n2"}
	probeNatives = []string{"Bash", "WebFetch"}
)

func decide(b *Bound) decisions {
	d := decisions{}
	m := FileMatcher{Home: "/home/u", Cwd: "/w"}
	for _, tool := range probeTools {
		d["tool "+tool] = b != nil && slices.Contains(b.DeniedTools, tool)
	}
	for _, a := range probeAccess {
		d["access "+a] = b != nil && slices.Contains(b.DeniedAccess, a)
	}
	for _, c := range probeCmds {
		denied := false
		if b != nil && b.Bash != nil {
			for _, p := range b.Bash.Deny {
				if p == c {
					denied = true
				}
			}
		}
		d["cmd "+c] = denied
	}
	for _, p := range probePaths {
		var fr *FileRules
		if b != nil {
			fr = b.Files
		}
		d["file "+p] = !m.Check(p, fr).Allowed()
	}
	for _, h := range probeHosts {
		// The domain rules alone (actions are probed below); under the
		// sandbox an absent allowlist is the empty one.
		var nr *NetworkRules
		if b != nil && b.Network != nil {
			nr = &NetworkRules{Domains: b.Network.Domains, AllowDomains: b.Network.AllowDomains, Enforce: b.Network.Enforce}
		}
		net, err := CompileNetwork(nr, false)
		denied := err != nil || !net.DecideHostName(h).Allowed()
		d["host "+h] = denied
	}
	for _, a := range ExpandActions([]string{ActionAll}) {
		d["action "+a] = b != nil && b.Network != nil && IsActionDenied(a, b.Network.Actions) != ""
	}
	d["sandbox"] = b != nil && b.Network != nil && b.Network.Enforce == EnforceSandbox
	d["guard+"] = b != nil && b.Network != nil && b.Network.Enforce != EnforceNone
	for _, n := range probeNodes {
		d["node "+n] = AssertNodeAllowed(n, b) != nil
	}
	for _, n := range probeNatives {
		d["native "+n] = len(NativeToolDenials(b, "claude-code", []string{n})) > 0
	}
	return d
}

func pick(r *rand.Rand, pool []string) []string {
	var out []string
	for _, s := range pool {
		if r.Intn(3) == 0 {
			out = append(out, s)
		}
	}
	return out
}

func randomBound(r *rand.Rand) *Bound {
	if r.Intn(8) == 0 {
		return nil
	}
	b := &Bound{DeniedTools: pick(r, probeTools), DeniedAccess: pick(r, probeAccess)}
	if r.Intn(2) == 0 {
		b.Bash = &BashRules{Deny: pick(r, probeCmds)}
	}
	if r.Intn(2) == 0 {
		b.Files = &FileRules{Deny: pick(r, []string{"~/.ssh", ".env", "/etc/**"})}
		if r.Intn(2) == 0 {
			b.Files.AllowOnly = append([]string{}, pick(r, []string{"/w/**", "/w/src", "/home/u/**", "*.go"})...)
		}
	}
	if r.Intn(2) == 0 {
		b.Network = &NetworkRules{Actions: pick(r, NetworkActions), Domains: pick(r, []string{"b.com", "*.api.a.com", "10.0.0.1"})}
		if r.Intn(2) == 0 {
			b.Network.Enforce = []Enforce{EnforceGuard, EnforceSandbox}[r.Intn(2)]
		}
		if r.Intn(2) == 0 {
			b.Network.Enforce = EnforceSandbox
			b.Network.AllowDomains = append([]string{}, pick(r, []string{"*.a.com", "api.a.com", "a.com", "b.com", "10.0.0.1", "*.api.a.com"})...)
		}
	}
	if r.Intn(3) == 0 {
		b.Nodes = &NodeRules{Deny: pick(r, probeNodes)}
		if r.Intn(2) == 0 {
			b.Nodes.Allow = append([]string{}, pick(r, probeNodes)...)
		}
	}
	if r.Intn(3) == 0 {
		b.NativeTools = map[string][]string{"claude-code": pick(r, probeNatives)}
	}
	return b
}

// TestMergeProperties checks, on random bounds, that the merge decides
// exactly "denied if either input denies" on every probe. That makes it
// commutative and associative in what it decides, and it never permits what
// an input denies.
func TestMergeProperties(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		a, b, c := randomBound(r), randomBound(r), randomBound(r)
		da, db := decide(a), decide(b)
		ab := decide(MergeBounds(a, b))
		for k := range da {
			want := da[k] || db[k]
			// File allowlists of globs intersect soundly but not exactly
			// (partial overlaps are dropped): the merge may deny more.
			if strings.HasPrefix(k, "file ") {
				if want && !ab[k] {
					t.Fatalf("probe %q: merge permits what an input denies", k)
				}
				continue
			}
			if ab[k] != want {
				aj, _ := json.Marshal(a)
				bj, _ := json.Marshal(b)
				mj, _ := json.Marshal(MergeBounds(a, b))
				t.Fatalf("probe %q: merge denies=%v, want %v\n a=%s\n b=%s\n merged=%s", k, ab[k], want, aj, bj, mj)
			}
		}
		if diff := cmp.Diff(ab, decide(MergeBounds(b, a))); diff != "" {
			t.Fatalf("not commutative: %s", diff)
		}
		left := decide(MergeBounds(MergeBounds(a, b), c))
		right := decide(MergeBounds(a, MergeBounds(b, c)))
		if diff := cmp.Diff(left, right); diff != "" {
			t.Fatalf("not associative: %s", diff)
		}
	}
}
