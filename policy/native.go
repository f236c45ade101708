package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Native tool categories: what a harness's own tools can do.
const (
	CategoryShell      = "shell"
	CategoryFileReads  = "file-reads"
	CategoryFileWrites = "file-writes"
	CategoryNetwork    = "network"
)

// NativeCategories lists the categories in the bounds SDK's order.
var NativeCategories = []string{CategoryShell, CategoryFileReads, CategoryFileWrites, CategoryNetwork}

// HarnessMode is what Barry can enforce on a harness's native tools in one
// mode of running it.
type HarnessMode struct {
	// Gate is true when a per-call hook rules on native tool calls.
	Gate bool `json:"gate"`
	// Ceiling is true when native tools can be taken away before the
	// harness starts (a static deny list).
	Ceiling bool `json:"ceiling"`
	// Ungated lists native tools the gate does not see (no hook event fires
	// before them), with why.
	Ungated map[string]string `json:"ungated,omitempty"`
	// LaunchCeiling lists the native tools "sandboxd launch" takes away
	// before the harness starts when the mode has no ceiling of its own
	// (the session configuration the launch writes turns them off); "*"
	// is every tool. A session started another way cannot count on it.
	LaunchCeiling []string `json:"launchCeiling,omitempty"`
	// Label describes the mode.
	Label string `json:"label"`
}

// NativeHarness is one harness: its native tools, the categories each
// belongs to, and its modes.
type NativeHarness struct {
	ID          string                  `json:"id"`
	Label       string                  `json:"label"`
	DefaultMode string                  `json:"defaultMode"`
	Modes       map[string]*HarnessMode `json:"modes"`
	// NativeTools are the harness's own tool names.
	NativeTools []string `json:"nativeTools"`
	// Categories maps each native tool to its categories (none for tools
	// that act only through other tools, such as a subagent launcher),
	// derived from Tools.
	Categories map[string][]string `json:"categories"`
	// Tools are the native tools by name.
	Tools map[string]NativeTool `json:"-"`
}

// Mode returns the named mode, or the default mode for "".
func (h *NativeHarness) Mode(mode string) (string, *HarnessMode, error) {
	if mode == "" {
		mode = h.DefaultMode
	}
	m, ok := h.Modes[mode]
	if !ok || m == nil {
		return mode, nil, fmt.Errorf("harness %s has no mode %q (modes: %s)", h.ID, mode, strings.Join(sortedKeys(h.Modes), ", "))
	}
	return mode, m, nil
}

// ToolsIn returns the harness's native tools in a category, sorted.
func (h *NativeHarness) ToolsIn(category string) []string {
	var out []string
	for _, t := range h.NativeTools {
		if slices.Contains(h.Categories[t], category) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// expandNames turns native tool names and category names into tool names.
func (h *NativeHarness) expandNames(names []string) []string {
	var out []string
	for _, n := range names {
		if slices.Contains(NativeCategories, n) {
			out = append(out, h.ToolsIn(n)...)
		} else if slices.Contains(h.NativeTools, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Reach is how a native tool's calls reach what a bound rules on: it
// gives the tool its categories and a per-call gate its guard.
type Reach uint8

const (
	// ReachNone acts only through other tools or on the session itself
	// (subagents, to-do lists, questions to the user): no category, no
	// guard beyond the native policy.
	ReachNone Reach = iota
	// ReachShell runs the command line under CommandKey: the shell guard.
	ReachShell
	// ReachShellOpaque runs a command in a shell the classifier cannot read
	// (PowerShell): denied whenever a shell rule applies.
	ReachShellOpaque
	// ReachShellSession reads, watches or stops shells already started
	// (their commands were ruled on when they started): the shell category,
	// no guard of its own.
	ReachShellSession
	// ReachFileRead reads the files named under PathKeys.
	ReachFileRead
	// ReachSearch reads below the roots under DirKeys (and what GlobKeys'
	// globs climb to).
	ReachSearch
	// ReachFileWrite writes the files named under PathKeys or FixedPaths.
	ReachFileWrite
	// ReachPatch is Codex's apply_patch: the paths come from the patch text
	// under CommandKey, read and written.
	ReachPatch
	// ReachFetch fetches the URLs under URLKeys or found in TextURLKeys.
	ReachFetch
	// ReachWebSearch searches the web, confined to allowed_domains.
	ReachWebSearch
)

// Categories are the native categories of a tool of this reach.
func (r Reach) Categories() []string {
	switch r {
	case ReachShell, ReachShellOpaque, ReachShellSession:
		return []string{CategoryShell}
	case ReachFileRead, ReachSearch:
		return []string{CategoryFileReads}
	case ReachFileWrite:
		return []string{CategoryFileWrites}
	case ReachPatch:
		return []string{CategoryFileReads, CategoryFileWrites}
	case ReachFetch, ReachWebSearch:
		return []string{CategoryNetwork}
	}
	return nil
}

// NativeTool is one native tool of a harness: its reach, and the input
// keys its calls carry that reach under. It is the one inventory: the
// native policy reads the categories, hookgate's guards the keys.
type NativeTool struct {
	Reach Reach
	// PathKeys hold paths (every key present is checked).
	PathKeys []string
	// CommandKey holds the command line (shell tools) or the patch.
	CommandKey string
	// DirKeys hold a shell's working directory or a search's roots.
	DirKeys []string
	// RequireDir refuses a search with no root under DirKeys, for tools
	// whose input shape is undocumented (a root under a key this table
	// does not know must not fall back to the cwd).
	RequireDir bool
	// GlobKeys hold glob patterns resolved from the search root: the root
	// a glob can climb to is searched too.
	GlobKeys []string
	// ExcludeKey holds ripgrep globs of a search, which a hook may rewrite
	// to leave out what files.deny matches below its roots
	// (FileMatcher.DecideSearchExcluding): Claude Code's Grep, which runs
	// ripgrep with every glob of its "glob" argument (Globs) and with
	// --no-follow, so that a symbolic link to a denied file is not read.
	ExcludeKey string
	// FixedPaths are paths the tool always writes (Gemini's save_memory).
	FixedPaths []string
	// URLKeys hold URLs; TextURLKeys hold free text whose URLs are fetched.
	URLKeys     []string
	TextURLKeys []string
}

func shellTool(dirKeys ...string) NativeTool {
	return NativeTool{Reach: ReachShell, CommandKey: "command", DirKeys: dirKeys}
}
func readTool(keys ...string) NativeTool  { return NativeTool{Reach: ReachFileRead, PathKeys: keys} }
func writeTool(keys ...string) NativeTool { return NativeTool{Reach: ReachFileWrite, PathKeys: keys} }
func searchTool(dirKeys []string, globKeys ...string) NativeTool {
	return NativeTool{Reach: ReachSearch, DirKeys: dirKeys, GlobKeys: globKeys}
}
func fetchTool(keys ...string) NativeTool { return NativeTool{Reach: ReachFetch, URLKeys: keys} }

var (
	noReach      = NativeTool{}
	shellSession = NativeTool{Reach: ReachShellSession}
	webSearch    = NativeTool{Reach: ReachWebSearch}
)

// Harnesses returns the built-in harness catalog, keyed by id. Each call
// returns a fresh copy the caller may modify.
func Harnesses() map[string]*NativeHarness { return buildHarnesses() }

// catalogEntries are the package's own read-only view of the harness
// catalog, each entry built once, on first use: resolving one session used
// to build the catalog seven times, which was a fifth of hookgate's policy
// load, and building all of it for the one harness a session names was
// still ~50 µs of each hookgate check. Code in this package reads
// them and never writes to them (TestCatalogIsNotModified checks).
var catalogEntries [len(catalogIDs)]struct {
	once sync.Once
	h    *NativeHarness
}

// catalogHarness returns the catalog's entry for id (shared, read-only),
// or nil for an id the catalog does not know.
func catalogHarness(id string) *NativeHarness {
	for i, cid := range catalogIDs {
		if cid == id {
			e := &catalogEntries[i]
			e.once.Do(func() { e.h = buildHarness(id) })
			return e.h
		}
	}
	return nil
}

// harnessIDs lists the catalog's ids, sorted.
func harnessIDs() []string { return slices.Clone(catalogIDs[:]) }

// NativeToolOf returns harness's native tool named name from the catalog;
// ok is false for a harness or tool the catalog does not know (which every
// enforcer denies).
func NativeToolOf(harness, name string) (t NativeTool, ok bool) {
	h := catalogHarness(harness)
	if h == nil {
		return NativeTool{}, false
	}
	t, ok = h.Tools[name]
	return t, ok
}

// catalogIDs are the catalog's harness ids, sorted: buildHarness has a
// case for each (TestCatalogIDs).
var catalogIDs = [...]string{"claude-code", "codex", "copilot", "cursor", "gemini", "pi"}

func buildHarnesses() map[string]*NativeHarness {
	out := make(map[string]*NativeHarness, len(catalogIDs))
	for _, id := range catalogIDs {
		out[id] = buildHarness(id)
	}
	return out
}

// buildHarness builds the catalog's entry for id; nil for an id it does
// not know.
func buildHarness(id string) *NativeHarness {
	var h *NativeHarness
	switch id {
	case "claude-code":
		h = &NativeHarness{
			ID: "claude-code", Label: "Claude Code", DefaultMode: "hosted",
			Tools: map[string]NativeTool{
				"Bash":         shellTool(),
				"PowerShell":   {Reach: ReachShellOpaque, CommandKey: "command"},
				"BashOutput":   shellSession,
				"KillShell":    shellSession,
				"TaskOutput":   shellSession,
				"TaskStop":     shellSession,
				"Monitor":      shellSession,
				"Read":         readTool("file_path"),
				"NotebookRead": readTool("notebook_path"),
				"Glob":         searchTool([]string{"path"}, "pattern"),
				"Grep":         {Reach: ReachSearch, DirKeys: []string{"path"}, GlobKeys: []string{"glob"}, ExcludeKey: "glob"},
				"LS":           searchTool([]string{"path"}),
				"Write":        writeTool("file_path"),
				"Edit":         writeTool("file_path"),
				"MultiEdit":    writeTool("file_path"),
				"NotebookEdit": writeTool("notebook_path"),
				"WebFetch":     fetchTool("url"),
				"WebSearch":    webSearch,
				// Claude Code 2.1.332's tools that act only through the
				// others, or on the session itself.
				"Agent": noReach, "Task": noReach, "TodoWrite": noReach, "ExitPlanMode": noReach,
				"ToolSearch": noReach, "ListAgents": noReach, "Skill": noReach, "Workflow": noReach,
				"ScheduleWakeup": noReach, "ReportFindings": noReach, "SendMessage": noReach,
				"AskUserQuestion": noReach, "EnterPlanMode": noReach,
				"TaskCreate": noReach, "TaskGet": noReach, "TaskList": noReach, "TaskUpdate": noReach,
				"CronCreate": noReach, "CronDelete": noReach, "CronList": noReach,
			},
			Modes: map[string]*HarnessMode{
				"hosted":       {Gate: true, Ceiling: true, Label: "Barry launches Claude Code with a PreToolUse hook gate"},
				"guest":        {Ceiling: true, Label: "the vendor's interface; a static ceiling, no per-call hook"},
				"instrumented": {Ceiling: true, Label: "the vendor's interface, instrumented; a static ceiling, no per-call hook"},
			},
		}
	case "codex":
		h = &NativeHarness{
			ID: "codex", Label: "OpenAI Codex CLI", DefaultMode: "hooks",
			Tools: map[string]NativeTool{
				"Bash":         shellTool("workdir"),
				"exec_command": shellTool("workdir"),
				"shell":        shellTool("workdir"),
				// write_stdin types into a running exec session: what it
				// types is a command line like any other (exec_command
				// "bash", then write_stdin "git push" meets the same rules).
				"write_stdin": {Reach: ReachShell, CommandKey: "chars"},
				"apply_patch": {Reach: ReachPatch, CommandKey: "command"},
				"view_image":  readTool("path"),
				"web_search":  webSearch,
				"update_plan": noReach, "spawn_agent": noReach, "request_user_input": noReach,
				"tool_search": noReach, "get_goal": noReach, "create_goal": noReach, "update_goal": noReach,
			},
			Modes: map[string]*HarnessMode{
				"hooks": {Gate: true, Label: "a launcher runs hookgate on PreToolUse; a missing script, crash, timeout or malformed answer is a deny",
					Ungated: map[string]string{"web_search": "Codex runs hosted web search without a PreToolUse hook"},
					// sandboxd launch turns web search off in Codex's
					// configuration.
					LaunchCeiling: []string{"web_search"}},
			},
		}
	case "copilot":
		h = &NativeHarness{
			// GitHub Copilot CLI 1.0.102: every tool fires preToolUse.
			ID: "copilot", Label: "GitHub Copilot CLI", DefaultMode: "hooks",
			Tools: map[string]NativeTool{
				// bash has no working-directory argument: it runs in the
				// session's cwd.
				"bash":      shellTool(),
				"read_bash": shellSession, "stop_bash": shellSession, "list_bash": shellSession,
				// Relative paths are read against the session's cwd.
				"view": readTool("path"),
				// Copilot also reads a search's roots from "path" (a string
				// or a list) when "paths" is absent, though its schema
				// names only "paths".
				"grep":   searchTool([]string{"paths", "path"}, "glob"),
				"glob":   searchTool([]string{"paths", "path"}, "pattern"),
				"create": writeTool("path"),
				"edit":   writeTool("path"),
				// Online only: web_fetch fetches url; semantic_code_search
				// and session_store_sql's cloud source ask GitHub's API with
				// no URL in their input, so they count as searches.
				"web_fetch":                       fetchTool("url"),
				"semantic_code_search":            webSearch,
				"session_store_sql":               webSearch,
				"fetch_copilot_cli_documentation": noReach, "skill": noReach, "sql": noReach,
				"task": noReach, "read_agent": noReach, "list_agents": noReach, "write_agent": noReach,
			},
			Modes: map[string]*HarnessMode{
				"hooks": {Gate: true, Label: "a preToolUse hook gate behind the fail-closed wrapper"},
			},
		}
	case "cursor":
		h = &NativeHarness{
			ID: "cursor", Label: "Cursor", DefaultMode: "hooks",
			Tools: map[string]NativeTool{
				"Shell":     shellTool("working_directory"),
				"Read":      readTool("file_path", "path", "target_file"),
				"Grep":      {Reach: ReachSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
				"Glob":      {Reach: ReachSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
				"LS":        {Reach: ReachSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
				"Write":     writeTool("file_path", "path", "target_file"),
				"Edit":      writeTool("file_path", "path", "target_file"),
				"Delete":    writeTool("file_path", "path", "target_file"),
				"WebFetch":  fetchTool("url"),
				"WebSearch": webSearch,
				"Task":      noReach,
			},
			Modes: map[string]*HarnessMode{
				"hooks": {Gate: true, Label: "Cursor hooks with failClosed: true"},
			},
		}
	case "gemini":
		h = &NativeHarness{
			ID: "gemini", Label: "Gemini CLI", DefaultMode: "hooks",
			Tools: map[string]NativeTool{
				"run_shell_command":         shellTool("directory", "dir_path"),
				"read_background_output":    shellSession,
				"list_background_processes": shellSession,
				"read_file":                 readTool("file_path", "absolute_path", "path"),
				"read_many_files":           searchTool([]string{"paths", "include", "dir_path", "directory"}),
				"list_directory":            searchTool([]string{"dir_path", "path"}),
				"glob":                      searchTool([]string{"dir_path", "path"}, "pattern"),
				"search_file_content":       searchTool([]string{"dir_path", "path"}, "include"),
				"grep_search":               searchTool([]string{"dir_path", "path"}, "include", "include_pattern"),
				"write_file":                writeTool("file_path", "absolute_path", "path"),
				"replace":                   writeTool("file_path", "absolute_path", "path"),
				"save_memory":               {Reach: ReachFileWrite, FixedPaths: []string{"~/.gemini/GEMINI.md"}},
				"web_fetch":                 {Reach: ReachFetch, URLKeys: []string{"url"}, TextURLKeys: []string{"prompt"}},
				"google_web_search":         webSearch,
				"write_todos":               noReach, "update_topic": noReach, "enter_plan_mode": noReach, "exit_plan_mode": noReach,
				"invoke_agent": noReach, "activate_skill": noReach,
			},
			Modes: map[string]*HarnessMode{
				"hooks": {Gate: true, Label: "a BeforeTool hook gate"},
			},
		}
	case "pi":
		h = &NativeHarness{
			ID: "pi", Label: "Pi", DefaultMode: "hosted",
			Tools: map[string]NativeTool{
				"bash":  shellTool(),
				"read":  readTool("path"),
				"grep":  searchTool([]string{"path"}, "glob"),
				"find":  searchTool([]string{"path"}, "pattern"),
				"ls":    searchTool([]string{"path"}),
				"write": writeTool("path"),
				"edit":  writeTool("path"),
			},
			Modes: map[string]*HarnessMode{
				"hosted": {Gate: true, Label: "a Barry extension blocks tools outside the native allowance"},
			},
		}
	default:
		return nil
	}
	h.Categories = make(map[string][]string, len(h.Tools))
	for name, t := range h.Tools {
		h.Categories[name] = t.Reach.Categories()
	}
	h.NativeTools = sortedKeys(h.Tools)
	return h
}

// NativeToolsTakenBack returns the harness's native tools a bound's guarded
// restrictions take back when no per-call gate can apply the guards: native
// calls bypass Barry's guards, so a restriction takes back the category.
// A shell rule takes back the shell; a file rule the shell and the file
// tools; denied write access the shell and file writes; a network rule the
// shell and the network tools.
func NativeToolsTakenBack(bound *Bound, h *NativeHarness) []string {
	if bound == nil || h == nil {
		return nil
	}
	var c []string
	if bound.Bash != nil && (len(bound.Bash.Deny) > 0 || len(bound.Bash.DenyPrograms) > 0) {
		c = append(c, CategoryShell)
	}
	if hasFileRules(bound) {
		c = append(c, CategoryShell, CategoryFileReads, CategoryFileWrites)
	}
	if len(bound.DeniedAccess) > 0 {
		c = append(c, CategoryShell, CategoryFileWrites)
	}
	if n := bound.Network; n != nil && (len(n.Actions) > 0 || len(n.Domains) > 0) {
		c = append(c, CategoryShell, CategoryNetwork)
	}
	return h.expandNames(c)
}

// NativeToolDenials returns the tools of inventory the bound denies outright
// for the harness: by name in deniedTools, or in nativeTools[harness] (by
// name or category).
func NativeToolDenials(bound *Bound, harness string, inventory []string) []string {
	if bound == nil {
		return nil
	}
	h := catalogHarness(harness)
	var out []string
	for _, t := range inventory {
		if slices.Contains(bound.DeniedTools, t) {
			out = append(out, t)
			continue
		}
		for _, n := range bound.NativeTools[harness] {
			if n == t || (h != nil && slices.Contains(h.Categories[t], n)) {
				out = append(out, t)
				break
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// NativeStatus is the decision for each native tool of a harness.
type NativeStatus struct {
	Allowed []string `json:"allowed"`
	Denied  []string `json:"denied"`
	// Refused maps a tool the policy needs taken back but the mode cannot
	// take back to why: the session must refuse to launch.
	Refused map[string]string `json:"refused"`
	// Uncontrolled maps an allowed tool that no per-call gate sees to why.
	Uncontrolled map[string]string `json:"uncontrolled"`
}

// NativeToolStatus decides each native tool of the harness in mode: a tool
// is granted by the traits' nativeTools (by name or category); a granted
// tool the bound denies, or takes back where no gate sees it, is denied;
// a tool that must go but the mode cannot take away is refused.
func NativeToolStatus(traits []*AgentTrait, bound *Bound, h *NativeHarness, mode string) (NativeStatus, error) {
	granted := map[string]bool{}
	for _, t := range traits {
		if t == nil {
			continue
		}
		for _, n := range h.expandNames(t.NativeTools[h.ID]) {
			granted[n] = true
		}
	}
	p, err := resolveNative(granted, nil, bound, h, mode, false)
	if err != nil {
		return NativeStatus{}, err
	}
	return NativeStatus{Allowed: p.Allowed, Denied: p.Denied, Refused: p.Refused, Uncontrolled: p.Uncontrolled}, nil
}

// NativePolicy is the native-tool policy of a session.
type NativePolicy struct {
	Harness string   `json:"harness"`
	Mode    string   `json:"mode"`
	Allowed []string `json:"allowed"`
	Denied  []string `json:"denied"`
	// Refused maps a tool the policy must take back but the mode cannot, to
	// why; a non-empty Refused means the session must not launch.
	Refused map[string]string `json:"refused"`
	// Uncontrolled maps allowed tools no per-call gate sees to why.
	Uncontrolled map[string]string `json:"uncontrolled"`
	// Conflicts maps a tool a trait grants by name but the bound denies to
	// the explanation (the bound wins).
	Conflicts map[string]string `json:"conflicts"`
	// OperatorOverride names an operator's override of the policy, if any.
	OperatorOverride string `json:"operatorOverride,omitempty"`
	// Reasons maps each denied tool to why.
	Reasons map[string]string `json:"reasons"`
}

// NativeGrants are the inputs of ResolveNativePolicy: the resolved trait
// grants (their Native map) and the effective bound.
type NativeGrants struct {
	Grants *ResolvedTraitGrants
	Bound  *Bound
	// Launch says the session is started by "sandboxd launch": the mode's
	// LaunchCeiling tools can be taken back too.
	Launch bool
}

// ResolveNativePolicy decides every native tool of harness h in mode, in
// this order:
//  1. a tool no trait grants (by name or category) is denied;
//  2. a tool the bound denies (deniedTools, nativeTools) is denied, and a
//     conflict is recorded when a trait granted it by name;
//  3. a tool a guarded restriction takes back is allowed where a per-call
//     gate sees it (the gate applies the guards), denied by the ceiling
//     where the mode has one, and refused otherwise;
//  4. anything else is allowed, and marked uncontrolled where no gate sees it.
//
// A tool that must be denied in a mode with neither gate nor ceiling is
// refused: the session must not launch.
func ResolveNativePolicy(g NativeGrants, h *NativeHarness, mode string) (*NativePolicy, error) {
	granted := map[string]bool{}
	byName := map[string]bool{}
	if g.Grants != nil {
		for n := range g.Grants.Native {
			for _, t := range h.expandNames([]string{n}) {
				granted[t] = true
				if n == t {
					byName[t] = true
				}
			}
		}
	}
	return resolveNative(granted, byName, g.Bound, h, mode, g.Launch)
}

func resolveNative(granted, byName map[string]bool, bound *Bound, h *NativeHarness, mode string, launch bool) (*NativePolicy, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: no harness", ErrNotAllowed)
	}
	mode, m, err := h.Mode(mode)
	if err != nil {
		return nil, err
	}
	p := &NativePolicy{
		Harness: h.ID, Mode: mode,
		Allowed: []string{}, Denied: []string{},
		Refused: map[string]string{}, Uncontrolled: map[string]string{},
		Conflicts: map[string]string{}, Reasons: map[string]string{},
	}
	denied := NativeToolDenials(bound, h.ID, h.NativeTools)
	takenBack := NativeToolsTakenBack(bound, h)
	// ceiling says whether tool can be taken away before the harness
	// starts: by the mode, or by the launch's configuration.
	ceiling := func(tool string) bool {
		return m.Ceiling || launch && (slices.Contains(m.LaunchCeiling, tool) || slices.Contains(m.LaunchCeiling, "*"))
	}
	// remove takes a tool away. Where the mode can neither gate nor take
	// it back, a bound's denial refuses the launch, and a tool merely not
	// granted is reported uncontrolled.
	remove := func(tool, reason string, byBound bool) {
		gated := m.Gate && m.Ungated[tool] == ""
		if !gated && !ceiling(tool) {
			why := fmt.Sprintf("%s, but %s mode %s can neither gate nor take back %s", reason, h.ID, mode, tool)
			if byBound {
				p.Refused[tool] = why
			} else {
				p.Uncontrolled[tool] = why
			}
			return
		}
		p.Denied = append(p.Denied, tool)
		p.Reasons[tool] = reason
	}
	for _, tool := range h.NativeTools {
		gated := m.Gate && m.Ungated[tool] == ""
		// A tool with no category (a subagent launcher, a to-do list) acts
		// only through other tools, which are decided on their own; it
		// needs no grant.
		needsGrant := len(h.Categories[tool]) > 0
		boundReason := ""
		switch {
		case slices.Contains(denied, tool):
			boundReason = fmt.Sprintf("the bound denies %s", tool)
			if byName[tool] {
				p.Conflicts[tool] = "granted by a trait by name, denied by the bound; the bound wins"
			}
		case slices.Contains(takenBack, tool) && !gated:
			boundReason = fmt.Sprintf("the bound's guards take back %s and no per-call gate sees it", describeNative(h, tool))
		}
		switch {
		case needsGrant && !granted[tool] && (boundReason == "" || gated || ceiling(tool)):
			remove(tool, fmt.Sprintf("no selected trait grants %s", describeNative(h, tool)), false)
		case boundReason != "":
			remove(tool, boundReason, true)
		default:
			p.Allowed = append(p.Allowed, tool)
			if !gated {
				why := m.Ungated[tool]
				if why == "" {
					why = fmt.Sprintf("%s mode %s has no per-call gate", h.ID, mode)
				}
				p.Uncontrolled[tool] = why
			}
		}
	}
	return p, nil
}

func describeNative(h *NativeHarness, tool string) string {
	c := h.Categories[tool]
	if len(c) == 0 {
		return tool
	}
	return fmt.Sprintf("%s (%s)", tool, strings.Join(c, ", "))
}

// ValidateNativeTools checks that a bag's traits and bounds grant or deny
// only native names (tools or categories) its harness offers. Paths in the
// error name the offending entry.
func ValidateNativeTools(bagName string, traits map[string]*AgentTrait, bounds map[string]*Bound, h *NativeHarness) error {
	var errs FieldErrors
	check := func(path string, names []string) {
		for i, n := range names {
			if !slices.Contains(h.NativeTools, n) && !slices.Contains(NativeCategories, n) {
				errs = append(errs, &FieldError{Path: index(path, i), Msg: fmt.Sprintf("%q is not a native tool or category of harness %s", n, h.ID)})
			}
		}
	}
	for _, name := range sortedKeys(traits) {
		if t := traits[name]; t != nil {
			check(join(bagName, "traits."+name+".nativeTools."+h.ID), t.NativeTools[h.ID])
		}
	}
	for _, name := range sortedKeys(bounds) {
		if b := bounds[name]; b != nil {
			check(join(bagName, "bounds."+name+".nativeTools."+h.ID), b.NativeTools[h.ID])
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
