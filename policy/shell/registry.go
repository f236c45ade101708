package shell

import (
	"maps"
	"slices"
	"sync"
)

// program is everything the classifier knows about one program: how its
// command line is read and what it runs, the network actions it performs,
// the hosts it contacts, the files it writes, and how its name and
// subcommands are matched. The walks that answer one question for every
// command (analyzer.command, networkActions, Classification.Domains,
// analyzer.commandWrites, matchRule, normalizeProgram) ask the registry
// first: a program in it is answered by its entry alone, never by a case
// of theirs, so a program's grammar lives in one place (its family's
// prog_*.go file) and adding one is one entry, not a case in every walk.
//
// A nil field is an answer, not a gap: nil run is the generic reading, nil
// actions is "no network", nil writes is "writes nothing itself". The one
// answer that cannot be left out is the hosts of a program with actions:
// an empty host list while actions are reported lets a domain rule pass
// only because Decide fails closed on it, so an entry with actions must
// say hosts or, explicitly, noHosts (TestProgramRegistry enforces this).
type program struct {
	// run analyses one invocation: records it, follows the commands it
	// runs and records its writes (through analyzer.commandWrites). nil is
	// analyzer.generic: recorded, writes from the entry, and its static
	// arguments tried as commands unless nonExec.
	run func(a *analyzer, inv invocation, in stdin, depth int)
	// nonExec says the program never runs its arguments as commands, so
	// the generic reading does not try them as ones (analyzer.suspect).
	nonExec bool
	// actions returns the network action tags (policy.Action* leaves) one
	// invocation performs; nil: none.
	actions func(inv invocation) []string
	// hosts returns the hosts one invocation contacts, as urlHost extracts
	// them (Classification.Domains canonicalises and deduplicates).
	hosts func(inv invocation) []string
	// noHosts says the program's actions go to hosts no word of the line
	// names (an entry with actions and no hosts must set it).
	noHosts bool
	// unread, when set, says why the destination of one invocation cannot
	// be read from the line although the program has a hosts answer (a
	// registry in a variable, GOPROXY=direct with no module path named);
	// "" when it can. Decide refuses such an invocation under domain rules
	// outside the sandbox, whatever other hosts the line names.
	unread func(inv invocation) string
	// configs are the files, outside the line, that can send the program
	// to other hosts than its hosts answer names (a project's .npmrc, the
	// user's pip.conf). The classifier reads no file: Decide looks for
	// them (configRedirect) and refuses under domain rules, outside the
	// sandbox, an invocation one of them may redirect.
	configs []configFile
	// writes records the files one invocation writes by its own
	// semantics; nil: none.
	writes func(a *analyzer, inv invocation)

	// globals, for a program read generically (nil run), says it has
	// subcommands: its chain is the first operands after these
	// value-taking global options (analyzer.generic). nil: no chain.
	globals *optSpec
	// runs, for a program read generically, are its subcommands that run
	// the rest of argv as a command, each with the number of operands
	// before the command (-1: only after "--"); analyzer.runner reads
	// them before the generic reading.
	runs map[string]int
	// subcommands, when set, are the program's known first subcommands: a
	// chain starting with any other word (an alias, an extension, a
	// plugin) may be any subcommand, so it matches every rule on the
	// program (matchRule).
	subcommands func() map[string]bool
	// aliases are other names that run this program ("hub" is git);
	// normalizeProgram maps them to the entry's name.
	aliases []string
	// dashed reports whether "NAME-SUB" runs "NAME SUB" (git's dashed
	// forms, "git-push"); normalizeProgram splits such a word.
	dashed func(sub string) bool
	// twin, when set, names the chain a subcommand chain does under
	// another name ("git send-pack" pushes: ["push"]), so that a rule on
	// the one denies the other (matchRule); nil: none.
	twin func(chain []string) []string
}

// programFamilies returns the per-family tables the registry is built
// from, each defined in its own prog_*.go file, by family name.
func programFamilies() map[string]map[string]*program {
	return map[string]map[string]*program{
		"net": netPrograms(), "remote": remotePrograms(), "vcs": vcsPrograms(),
		"dns": dnsPrograms(), "proto": protoPrograms(), "cloud": cloudPrograms(),
		"pkg": pkgPrograms(), "builtin": builtinPrograms(), "editor": editorPrograms(),
		"exec": execPrograms(), "file": filePrograms(), "lookup": lookupPrograms(),
	}
}

// programRegistry is the registry: normalized program name → its entry
// (programs), and what normalizeProgram reads of it: the entries' aliases
// mapped to their names (aliases), and the entries that have dashed forms,
// sorted (dashed). families are the tables it was built from.
type programRegistry struct {
	programs map[string]*program
	aliases  map[string]string
	dashed   []string
	families map[string]map[string]*program
}

// theRegistry holds the registry, built by registry on first use and
// never changed after (built at init it cost every process that
// links the package, hookgate on each tool call, even one that classifies
// nothing). It is not a sync.OnceValue initializer because the entries'
// functions reach the walks that read it: an initializer would be an
// initialization cycle.
var theRegistry struct {
	once sync.Once
	r    programRegistry
}

// registry returns the registry, building it on first use. Safe for
// concurrent use; callers must not change what it returns.
func registry() *programRegistry {
	theRegistry.once.Do(func() { theRegistry.r = buildRegistry() })
	return &theRegistry.r
}

// programs returns the registry's entries by normalized program name.
func programs() map[string]*program { return registry().programs }

// buildRegistry merges the families; a program or alias registered twice
// is a programming error, and panics.
func buildRegistry() programRegistry {
	r := programRegistry{programs: map[string]*program{}, aliases: map[string]string{}, families: programFamilies()}
	for _, fam := range slices.Sorted(maps.Keys(r.families)) {
		for name, p := range r.families[fam] {
			if r.programs[name] != nil {
				panic("policy/shell: program " + name + " is registered twice")
			}
			r.programs[name] = p
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.programs)) {
		p := r.programs[name]
		for _, al := range p.aliases {
			if r.programs[al] != nil || r.aliases[al] != "" {
				panic("policy/shell: alias " + al + " of " + name + " is registered twice")
			}
			r.aliases[al] = name
		}
		if p.dashed != nil {
			r.dashed = append(r.dashed, name)
		}
	}
	return r
}

// registered analyses one invocation of a registered program: its entry's
// run, or else the generic reading (a subcommand of runs that runs a
// command, then analyzer.generic).
func (a *analyzer) registered(p *program, inv invocation, in stdin, depth int) {
	switch {
	case p.run != nil:
		p.run(a, inv, in, depth)
	case p.runs != nil && a.runner(inv, in, depth):
	default:
		a.generic(inv, in, depth)
	}
}

// globalsOf returns the value-taking global options of a program with
// subcommands, and whether it has them: a registered program's globals,
// or else its globalOpts row.
func globalsOf(prog string) (optSpec, bool) {
	if p := programs()[prog]; p != nil {
		if p.globals == nil {
			return optSpec{}, false
		}
		return *p.globals, true
	}
	sp, ok := globalOpts()[prog]
	return sp, ok
}

// runnersOf returns a program's subcommands that run a command (see
// program.runs): a registered program's runs, or else its runners row.
func runnersOf(prog string) (map[string]int, bool) {
	if p := programs()[prog]; p != nil {
		return p.runs, p.runs != nil
	}
	subs, ok := runners()[prog]
	return subs, ok
}

// everyAction is the actions of a program that can speak any protocol, or
// talks to endpoints the line does not name: every leaf, so a domain rule
// cannot be passed by a tool the classifier does not read.
func everyAction(invocation) []string { return allLeafActions }

// hostList collects the hosts of one invocation in the order its words
// name them, skipping words that hold none.
type hostList []string

// url adds the host of a URL or a bare host[:port][/path].
func (l *hostList) url(raw string) { l.add(urlHost(raw, false)) }

// scp adds the host of a URL or an scp-style [user@]host:path.
func (l *hostList) scp(raw string) { l.add(urlHost(raw, true)) }

// dflt adds a host the program contacts because the line names none
// (a package manager's default registry): Domains reports it, and
// namedDomains, what the line itself names, leaves it out.
func (l *hostList) dflt(h string) { l.add(defaultMark + h) }

// defaultMark starts a hosts answer's entry that is a default (hostList.dflt).
const defaultMark = "\x00default:"

func (l *hostList) add(h string) {
	if h != "" {
		*l = append(*l, h)
	}
}
