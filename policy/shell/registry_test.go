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
// none (noHosts), so a half-registered program cannot pass; and the network
// and remote families are all in the registry, each in its own table.
func TestProgramRegistry(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(programs)) {
		p := programs[name]
		if p.actions != nil && p.hosts == nil && !p.noHosts {
			t.Errorf("program %q reports network actions but neither hosts nor noHosts", name)
		}
		if p.noHosts && p.hosts == nil && p.actions == nil {
			t.Errorf("program %q sets noHosts but reports no actions", name)
		}
		if p.noHosts && p.hosts != nil {
			t.Errorf("program %q has both hosts and noHosts", name)
		}
	}
	// A registered program must have no row in the generic tables either:
	// command() reads shells and wrappers before the registry, and the
	// others would be a second answer the registry hides.
	for table, m := range map[string]func(string) bool{
		"shells":          func(n string) bool { _, ok := shells()[n]; return ok },
		"wrappers":        func(n string) bool { _, ok := wrappers()[n]; return ok },
		"lookups":         func(n string) bool { return lookups()[n] },
		"nonExec":         func(n string) bool { return nonExec()[n] },
		"opaqueExecutors": func(n string) bool { return opaqueExecutors()[n] },
		"globalOpts":      func(n string) bool { _, ok := globalOpts()[n]; return ok },
		"interpreters":    func(n string) bool { _, ok := interpreters()[n]; return ok },
		"runners":         func(n string) bool { _, ok := runners()[n]; return ok },
		"pkgRead":         func(n string) bool { return pkgRead()[n] != nil },
		"pkgWrite":        func(n string) bool { return pkgWrite()[n] != nil },
		"writeAll":        func(n string) bool { return writeAll()[n] },
		"writeAfterFirst": func(n string) bool { return writeAfterFirst()[n] },
		"writeLast":       func(n string) bool { return writeLast()[n] },
	} {
		for name := range programs {
			if m(name) {
				t.Errorf("program %q is in the registry and in %s", name, table)
			}
		}
	}
	families := map[string]struct {
		table map[string]*program
		names []string
	}{
		"net":    {netPrograms, []string{"curl", "wget", "http", "https", "httpie", "xh", "xhs", "nc", "ncat", "netcat", "telnet", "socat"}},
		"remote": {remotePrograms, []string{"ssh", "scp", "sftp", "rsync"}},
	}
	for fam, f := range families {
		for _, name := range f.names {
			if f.table[name] == nil {
				t.Errorf("program %q is not in the %s family's table", name, fam)
			}
			if programs[name] != f.table[name] {
				t.Errorf("program %q: the registry does not hold the %s family's entry", name, fam)
			}
		}
	}
}

// registrySamples are, for every registry entry, one line it reads as
// contacting a host: the entry's actions and hosts must both answer.
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
}

func TestProgramRegistrySamples(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(programs)) {
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
		if programs[name].actions != nil && len(ClassifyNetworkActions(c, "")) == 0 {
			t.Errorf("%q: no network actions", s.line)
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
				if v, err := strconv.Unquote(bl.Value); err == nil && programs[v] != nil {
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
