package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite seccomp.json and containerd/*.json from seccomp/docker-default.json")

const (
	basePath    = "seccomp/docker-default.json"
	profilePath = "seccomp.json"
	readmePath  = "README.md"
)

// containerdArches are the architectures deploy/containerd has a profile
// for: the ones sandboxd runs on.
var containerdArches = []string{"amd64", "arm64"}

func containerdPath(goarch string) string { return "containerd/seccomp-" + goarch + ".json" }

// fromBase lists what sandboxd needs that Docker's default already allows
// in a default container on amd64 and arm64 (so it is no addition), with
// the reason sandboxd needs it. If the base ever stops allowing one, this
// test fails and it becomes an addition.
var fromBase = []struct{ name, reason string }{
	{"landlock_create_ruleset", "Landlock ruleset for the command (procjail/landlock_linux.go)"},
	{"landlock_add_rule", "Landlock rules for the writable paths"},
	{"landlock_restrict_self", "the command's Landlock domain"},
	{"seccomp", "the command's filter, and the --allow-unix-socket listener (SECCOMP_FILTER_FLAG_NEW_LISTENER)"},
	{"prctl", "no_new_privs, capability bounding set, PDEATHSIG, dumpable"},
	{"capset", "the command's empty capability sets"},
	{"ioctl", "seccomp user notification (SECCOMP_IOCTL_NOTIF_*)"},
	{"pidfd_open", "--allow-unix-socket: a handle on the calling process"},
	{"process_vm_readv", "--allow-unix-socket: copying the address once (base: kernel 4.8 or later)"},
	{"socket", "route and netfilter netlink for loopback and the capture's rules (base: every family but AF_ALG and AF_VSOCK)"},
	{"openat2", "RESOLVE_NO_SYMLINKS opens in the file-system layer"},
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, path string) Profile {
	t.Helper()
	p, err := ParseProfile(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// TestProfileIsCommitted regenerates seccomp.json from the base and
// compares it byte for byte with the committed file; -update rewrites it.
func TestProfileIsCommitted(t *testing.T) {
	got, err := SeccompProfile(readFile(t, basePath))
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted(t, profilePath, got)
}

// TestContainerdProfilesAreCommitted does the same for containerd's
// resolved profiles.
func TestContainerdProfilesAreCommitted(t *testing.T) {
	for _, arch := range containerdArches {
		got, err := ContainerdProfile(readFile(t, basePath), arch)
		if err != nil {
			t.Fatal(err)
		}
		checkCommitted(t, containerdPath(arch), got)
	}
}

func checkCommitted(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("%s is not what derives from %s (go test ./deploy -update rewrites it):\n%s",
			path, basePath, cmp.Diff(string(want), string(got)))
	}
}

// TestBaseRoundTrips shows that Profile holds every field of the base:
// decoded and encoded again it is the same bytes (the upstream file has no
// final newline).
func TestBaseRoundTrips(t *testing.T) {
	base := readFile(t, basePath)
	p := parse(t, basePath)
	got, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.TrimSuffix(base, []byte("\n")), '\n'); !bytes.Equal(got, want) {
		t.Errorf("base does not survive decoding and encoding:\n%s", cmp.Diff(string(want), string(got)))
	}
}

// TestProfileOnlyAdds checks the committed profile against the base: the
// same header, the base's rules unchanged and in order, then exactly the
// additions' rules, each an allow.
func TestProfileOnlyAdds(t *testing.T) {
	base, got := parse(t, basePath), parse(t, profilePath)
	if d := cmp.Diff(base, got, cmpopts.IgnoreFields(Profile{}, "Syscalls")); d != "" {
		t.Errorf("profile header differs from the base (-base +profile):\n%s", d)
	}
	n := len(base.Syscalls)
	if len(got.Syscalls) < n {
		t.Fatalf("profile has %d rules, the base %d", len(got.Syscalls), n)
	}
	if d := cmp.Diff(base.Syscalls, got.Syscalls[:n]); d != "" {
		t.Errorf("profile changes the base's rules (-base +profile):\n%s", d)
	}
	if d := cmp.Diff(additionRules(), got.Syscalls[n:]); d != "" {
		t.Errorf("profile's added rules are not the additions (-additions +profile):\n%s", d)
	}
	for _, r := range got.Syscalls[n:] {
		if r.Action != ActAllow || r.ErrnoRet != nil {
			t.Errorf("added rule for %v: action %s: an addition may only allow", r.Names, r.Action)
		}
	}
}

// TestContainerdProfileOnlyAdds checks each committed containerd profile
// against the base resolved the same way: the same header, the base's
// resolved rules unchanged, then exactly the additions' resolved rules;
// and nothing in it that containerd would not read as meant (archMap,
// conditions).
func TestContainerdProfileOnlyAdds(t *testing.T) {
	for _, arch := range containerdArches {
		base, err := parse(t, basePath).Resolve(arch, DefaultCapabilities(), landlockKernel)
		if err != nil {
			t.Fatal(err)
		}
		added, err := Profile{Syscalls: additionRules()}.Resolve(arch, DefaultCapabilities(), landlockKernel)
		if err != nil {
			t.Fatal(err)
		}
		got := parse(t, containerdPath(arch))
		if d := cmp.Diff(base, got, cmpopts.IgnoreFields(Profile{}, "Syscalls")); d != "" {
			t.Errorf("%s: header differs from the resolved base (-base +profile):\n%s", arch, d)
		}
		if len(got.ArchMap) != 0 || len(got.Architectures) == 0 {
			t.Errorf("%s: archMap %v, architectures %v: want only architectures", arch, got.ArchMap, got.Architectures)
		}
		n := len(base.Syscalls)
		if len(got.Syscalls) != n+len(added.Syscalls) {
			t.Fatalf("%s: %d rules, want the resolved base's %d and %d added", arch, len(got.Syscalls), n, len(added.Syscalls))
		}
		if d := cmp.Diff(base.Syscalls, got.Syscalls[:n]); d != "" {
			t.Errorf("%s: the base's resolved rules changed (-base +profile):\n%s", arch, d)
		}
		if d := cmp.Diff(added.Syscalls, got.Syscalls[n:]); d != "" {
			t.Errorf("%s: added rules are not the resolved additions (-additions +profile):\n%s", arch, d)
		}
		for _, r := range got.Syscalls {
			if r.Includes != nil || r.Excludes != nil || r.Comment != "" {
				t.Errorf("%s: rule %v keeps a condition or comment containerd would ignore", arch, r.Names)
			}
		}
		// What the Docker form would give away under containerd stays refused.
		for _, name := range []string{"unshare", "setns", "bpf", "fsopen", "clone3", "pidfd_getfd"} {
			want := name == "pidfd_getfd"
			if allowed := AllowsUnconditionally(got, name); allowed != want {
				t.Errorf("%s: %s: allowed unconditionally = %v, want %v", arch, name, allowed, want)
			}
		}
	}
}

// TestBaseAllowedStaysAllowed checks, per system call and per container
// (architecture, capabilities), that every way the base allows a call (its
// action with its argument conditions) the profile allows it too, and that
// the only calls whose treatment differs at all are the additions'.
func TestBaseAllowedStaysAllowed(t *testing.T) {
	base, got := parse(t, basePath), parse(t, profilePath)
	var added []string
	for _, a := range additions {
		added = append(added, a.Rule.Names...)
	}
	reported := map[string]bool{}
	for _, env := range testEnvs() {
		b, g := treatment(base, env), treatment(got, env)
		for name, ways := range b {
			for _, w := range ways {
				if strings.HasPrefix(w, ActAllow) && !slices.Contains(g[name], w) && !reported[name] {
					reported[name] = true
					t.Errorf("%s on %s: the base allows it (%s), the profile does not", name, env, w)
				}
			}
		}
		for name, ways := range g {
			if !slices.Equal(ways, b[name]) && !slices.Contains(added, name) && !reported[name] {
				reported[name] = true
				t.Errorf("%s on %s: treated %v, by the base %v, but it is no addition", name, env, ways, b[name])
			}
		}
	}
}

// treatment files the rules that apply in env by system call, each as its
// action and argument conditions.
func treatment(p Profile, env testEnv) map[string][]string {
	out := map[string][]string{}
	for name, rules := range rulesByName(p, env) {
		for _, r := range rules {
			w := r.Action
			if r.ErrnoRet != nil {
				w += fmt.Sprintf(" errno %d", *r.ErrnoRet)
			}
			for _, a := range r.Args {
				w += fmt.Sprintf(" arg%d %s %#x %#x", a.Index, a.Op, a.Value, a.ValueTwo)
			}
			out[name] = append(out[name], w)
		}
	}
	return out
}

// TestAdditionsAreNeeded checks that in a default container on amd64 the
// base refuses each addition (no rule at all, or for clone only one that
// refuses every namespace flag) and the profile allows it.
func TestAdditionsAreNeeded(t *testing.T) {
	base, got := parse(t, basePath), parse(t, profilePath)
	env := testEnv{arch: "amd64", caps: DefaultCapabilities()}
	b, g := rulesByName(base, env), rulesByName(got, env)
	for _, a := range additions {
		for _, name := range a.Rule.Names {
			for _, r := range b[name] {
				if r.Action == ActAllow && len(r.Args) == 0 {
					t.Errorf("%s: the base already allows it in a default container, whatever its arguments", name)
				}
			}
			if !slices.ContainsFunc(g[name], func(r Rule) bool { return r.Action == ActAllow }) {
				t.Errorf("%s: the profile does not allow it in a default container", name)
			}
		}
	}
	// clone: the base's only allow refuses every namespace flag; the
	// addition lets all but CLONE_NEWCGROUP through.
	const sandboxdFlags = 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000 // USER NS PID NET IPC UTS
	if allowsClone(b["clone"], sandboxdFlags) {
		t.Error("clone: the base already allows sandboxd's namespace flags")
	}
	if !allowsClone(g["clone"], sandboxdFlags) {
		t.Error("clone: the profile refuses sandboxd's namespace flags")
	}
	if allowsClone(g["clone"], sandboxdFlags|cloneNewCgroup) {
		t.Error("clone: the profile allows CLONE_NEWCGROUP")
	}
	if !allowsClone(g["clone"], 0x00010000|0x00000100) { // CLONE_THREAD|CLONE_VM: a thread
		t.Error("clone: the profile refuses a plain thread")
	}
}

// allowsClone evaluates the clone rules for flags as the filter would.
func allowsClone(rules []Rule, flags uint64) bool {
	for _, r := range rules {
		if r.Action != ActAllow {
			continue
		}
		ok := true
		for _, a := range r.Args {
			if a.Index != 0 || a.Op != CmpMaskedEq || flags&a.Value != a.ValueTwo {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestFromBaseIsAllowed keeps the other half of the story true: what
// sandboxd uses without an addition is allowed by the base in a default
// container.
func TestFromBaseIsAllowed(t *testing.T) {
	base := parse(t, basePath)
	for _, arch := range []string{"amd64", "arm64"} {
		rules := rulesByName(base, testEnv{arch: arch, caps: DefaultCapabilities()})
		for _, f := range fromBase {
			if !slices.ContainsFunc(rules[f.name], func(r Rule) bool { return r.Action == ActAllow }) {
				t.Errorf("%s on %s: the base no longer allows it (needed for %s): it must become an addition", f.name, arch, f.reason)
			}
		}
	}
}

// TestAdditionsDocumented checks the list itself: one reason of one line
// per addition, no name twice, no name the list of inherited calls has, and
// README.md's table of the diff naming exactly the additions.
func TestAdditionsDocumented(t *testing.T) {
	seen := map[string]bool{}
	var names []string
	for _, a := range Additions() {
		if a.Reason == "" || strings.Contains(a.Reason, "\n") || strings.HasSuffix(a.Reason, ".") {
			t.Errorf("%v: the reason must be one line without a final period: %q", a.Rule.Names, a.Reason)
		}
		if len(a.Rule.Names) == 0 {
			t.Errorf("addition %q names no system call", a.Reason)
		}
		for _, n := range a.Rule.Names {
			if seen[n] {
				t.Errorf("%s: added twice", n)
			}
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, f := range fromBase {
		if seen[f.name] {
			t.Errorf("%s: both inherited from the base and added", f.name)
		}
	}
	documented := readmeDiffTable(t)
	slices.Sort(names)
	slices.Sort(documented)
	if d := cmp.Diff(names, documented); d != "" {
		t.Errorf("%s's table of the diff does not list exactly the additions (-additions +README):\n%s", readmePath, d)
	}
}

// readmeDiffTable returns the system calls in the first column of the
// first table under README.md's "The diff explained" heading.
func readmeDiffTable(t *testing.T) []string {
	t.Helper()
	text := string(readFile(t, readmePath))
	_, section, ok := strings.Cut(text, "\n## The diff explained\n")
	if !ok {
		t.Fatalf("%s: no section \"## The diff explained\"", readmePath)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)`")
	var names []string
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		if m := row.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s: the diff's table lists no system call", readmePath)
	}
	return names
}

// TestSeccompProfileRefuses shows the derivation's checks failing.
func TestSeccompProfileRefuses(t *testing.T) {
	for _, tc := range []struct{ name, base, want string }{
		{"unknown field", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[],"extra":1}`, `unknown field "extra"`},
		{"deprecated name", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"name":"read","action":"SCMP_ACT_ALLOW"}]}`, `unknown field "name"`},
		{"trailing data", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]} {}`, "data after the profile"},
		{"default allow", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`, "default action SCMP_ACT_ALLOW allows every system call"},
		{"already allowed", `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","mount"],"action":"SCMP_ACT_ALLOW"}]}`,
			"addition mount: the base profile already allows it unconditionally"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SeccompProfile([]byte(tc.base))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SeccompProfile(%s) = %v, want an error containing %q", tc.base, err, tc.want)
			}
		})
	}
}

// TestResolveRefuses shows Resolve's checks failing.
func TestResolveRefuses(t *testing.T) {
	minKernel := Profile{Syscalls: []Rule{{Names: []string{"read"}, Action: ActAllow, Includes: &Filter{MinKernel: "4"}}}}
	for _, tc := range []struct {
		name         string
		p            Profile
		arch, kernel string
		want         string
	}{
		{"arch", Profile{}, "s390x", "5.13", `architecture "s390x": sandboxd runs on amd64 and arm64 only`},
		{"architectures", Profile{Architectures: []string{"SCMP_ARCH_X86_64"}}, "amd64", "5.13", "architectures: the profile must use archMap"},
		{"minKernel", minKernel, "amd64", "5.13", `syscalls[0] [read]: kernel version "4": want "major.minor"`},
		{"kernel", minKernel, "amd64", "6.x", `kernel version "6.x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.Resolve(tc.arch, DefaultCapabilities(), tc.kernel)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Resolve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAdditionsIsACopy: changing what Additions returns changes nothing.
func TestAdditionsIsACopy(t *testing.T) {
	a := Additions()
	a[0].Rule.Names[0] = "changed"
	a[0].Rule.Args[0].Value = 0
	if additions[0].Rule.Names[0] == "changed" || additions[0].Rule.Args[0].Value == 0 {
		t.Error("Additions shares its slices with the table")
	}
}

// testEnv is a container as the engines see it when they pick the rules.
type testEnv struct {
	arch string
	caps []string
}

func (e testEnv) String() string {
	if len(e.caps) == len(DefaultCapabilities()) {
		return e.arch + " with the default capabilities"
	}
	return e.arch + " with " + strings.Join(e.caps, ",")
}

// testEnvs is every architecture a rule names, with the default
// capabilities and with each capability a rule names added.
func testEnvs() []testEnv {
	arches := []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64", "arm", "x86"}
	extra := []string{"", "CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_BOOT", "CAP_SYS_MODULE", "CAP_SYS_NICE"}
	var envs []testEnv
	for _, a := range arches {
		for _, c := range extra {
			caps := slices.Clone(DefaultCapabilities())
			if c != "" {
				caps = append(caps, c)
			}
			envs = append(envs, testEnv{arch: a, caps: caps})
		}
	}
	return envs
}

// rulesByName picks the rules that apply in env, as Docker does when it
// creates a container on the oldest kernel sandboxd runs on, and files
// them by system call.
func rulesByName(p Profile, env testEnv) map[string][]Rule {
	out := map[string][]Rule{}
	for _, r := range p.Syscalls {
		if !applies(r, env) {
			continue
		}
		for _, n := range r.Names {
			out[n] = append(out[n], r)
		}
	}
	return out
}

func applies(r Rule, env testEnv) bool {
	ok, err := r.appliesTo(env.arch, env.caps, landlockKernel)
	if err != nil {
		panic(err)
	}
	return ok
}
