package shell

// program is everything the classifier knows about one program: how its
// command line is read and what it runs, the network actions it performs,
// the hosts it contacts and the files it writes. The walks that answer one
// question for every command (analyzer.command, networkActions,
// Classification.Domains, analyzer.commandWrites) ask the registry first:
// a program in it is answered by its entry alone, never by a case of
// theirs, so a program's grammar lives in one place (its family's
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
	// writes records the files one invocation writes by its own
	// semantics; nil: none.
	writes func(a *analyzer, inv invocation)
}

// programFamilies are the per-family tables the registry is built from,
// each in its own prog_*.go file.
var programFamilies = []map[string]*program{netPrograms, remotePrograms}

// programs is the registry: normalized program name → its entry. It is
// filled in init, not by an initializer, because the entries' functions
// reach the walks that read it (an initializer would be a cycle).
var programs map[string]*program

func init() {
	programs = map[string]*program{}
	for _, fam := range programFamilies {
		for name, p := range fam {
			if programs[name] != nil {
				panic("policy/shell: program " + name + " is registered twice")
			}
			programs[name] = p
		}
	}
}

// hostList collects the hosts of one invocation in the order its words
// name them, skipping words that hold none.
type hostList []string

// url adds the host of a URL or a bare host[:port][/path].
func (l *hostList) url(raw string) { l.add(urlHost(raw, false)) }

// scp adds the host of a URL or an scp-style [user@]host:path.
func (l *hostList) scp(raw string) { l.add(urlHost(raw, true)) }

func (l *hostList) add(h string) {
	if h != "" {
		*l = append(*l, h)
	}
}
