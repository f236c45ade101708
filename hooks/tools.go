package hooks

import (
	"strings"
)

// Category is what a native tool does, which decides the guards its calls
// go through.
type Category uint8

const (
	// CatOther has no guard beyond the native policy (subagents, todo
	// lists, questions to the user).
	CatOther Category = iota
	// CatShell runs a command line: the shell guard.
	CatShell
	// CatShellOpaque runs a command in a shell the classifier cannot read
	// (PowerShell): denied whenever a shell guard would apply.
	CatShellOpaque
	// CatFileRead reads the files named by its path parameters.
	CatFileRead
	// CatSearch reads below directory roots (Glob, Grep, ls).
	CatSearch
	// CatFileWrite writes the files named by its path parameters.
	CatFileWrite
	// CatPatch is Codex's apply_patch: paths come from the patch text.
	CatPatch
	// CatFetch fetches URLs: http:read and the domain rules.
	CatFetch
	// CatWebSearch searches the web: http:read, confined domains.
	CatWebSearch
)

// NativeTool says how to read one native tool's input.
type NativeTool struct {
	Category Category
	// PathKeys are the input keys holding paths, first present wins for
	// single-path tools; all present are checked.
	PathKeys []string
	// CommandKey holds the command line (shell tools) or patch (apply_patch).
	CommandKey string
	// DirKeys hold a shell's working directory or a search root.
	DirKeys []string
	// RequireDir denies a search whose root is not in DirKeys, for tools
	// whose input shape is undocumented (a root read under a key this
	// table does not know must not fall back to the cwd).
	RequireDir bool
	// GlobKeys hold glob patterns resolved from the search root (Glob's
	// pattern, Grep's glob filter, Gemini's include): the root the glob
	// can climb to is searched too.
	GlobKeys []string
	// FixedPaths are paths the tool always writes (Gemini's save_memory).
	FixedPaths []string
	// URLKeys hold URLs; TextURLKeys hold free text whose URLs are fetched.
	URLKeys     []string
	TextURLKeys []string
}

var (
	shellTool = func(dirKeys ...string) NativeTool {
		return NativeTool{Category: CatShell, CommandKey: "command", DirKeys: dirKeys}
	}
	readTool   = func(keys ...string) NativeTool { return NativeTool{Category: CatFileRead, PathKeys: keys} }
	writeTool  = func(keys ...string) NativeTool { return NativeTool{Category: CatFileWrite, PathKeys: keys} }
	searchTool = func(keys ...string) NativeTool { return NativeTool{Category: CatSearch, DirKeys: keys} }
	other      = NativeTool{Category: CatOther}
)

// NativeTools maps each harness's native tool names to how they are
// guarded. A tool not listed is CatOther when the native policy allows it
// by name, and denied otherwise. MCP tools are not listed here: they are
// recognized by name (mcp__server__tool; Cursor's MCP:tool).
var NativeTools = map[Harness]map[string]NativeTool{
	ClaudeCode: {
		"Bash":         shellTool(),
		"PowerShell":   {Category: CatShellOpaque, CommandKey: "command"},
		"Read":         readTool("file_path"),
		"NotebookRead": readTool("notebook_path"),
		"Write":        writeTool("file_path"),
		"Edit":         writeTool("file_path"),
		"MultiEdit":    writeTool("file_path"),
		"NotebookEdit": writeTool("notebook_path"),
		"Glob":         {Category: CatSearch, DirKeys: []string{"path"}, GlobKeys: []string{"pattern"}},
		"Grep":         {Category: CatSearch, DirKeys: []string{"path"}, GlobKeys: []string{"glob"}},
		"LS":           searchTool("path"),
		"WebFetch":     {Category: CatFetch, URLKeys: []string{"url"}},
		"WebSearch":    {Category: CatWebSearch},
		"Agent":        other,
		"Task":         other,
	},
	Codex: {
		"Bash":         shellTool("workdir"),
		"exec_command": shellTool("workdir"),
		"shell":        shellTool("workdir"),
		"apply_patch":  {Category: CatPatch, CommandKey: "command"},
		// write_stdin types into a running exec session: what it types is
		// a command line like any other (exec_command "bash", then
		// write_stdin "git push" must meet the same rules).
		"write_stdin": {Category: CatShell, CommandKey: "chars"},
		"view_image":  readTool("path"),
		"spawn_agent": other,
	},
	Cursor: {
		"Shell":     shellTool("working_directory"),
		"Read":      readTool("file_path", "path", "target_file"),
		"Write":     writeTool("file_path", "path", "target_file"),
		"Edit":      writeTool("file_path", "path", "target_file"),
		"Delete":    writeTool("file_path", "path", "target_file"),
		"Grep":      {Category: CatSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
		"Glob":      {Category: CatSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
		"LS":        {Category: CatSearch, DirKeys: []string{"path", "target_directory"}, RequireDir: true},
		"WebFetch":  {Category: CatFetch, URLKeys: []string{"url"}},
		"WebSearch": {Category: CatWebSearch},
		"Task":      other,
	},
	Gemini: {
		"run_shell_command":   shellTool("directory", "dir_path"),
		"read_file":           readTool("file_path", "absolute_path", "path"),
		"read_many_files":     {Category: CatSearch, DirKeys: []string{"paths", "include", "dir_path", "directory"}},
		"write_file":          writeTool("file_path", "absolute_path", "path"),
		"replace":             writeTool("file_path", "absolute_path", "path"),
		"save_memory":         {Category: CatFileWrite, FixedPaths: []string{"~/.gemini/GEMINI.md"}},
		"list_directory":      searchTool("dir_path", "path"),
		"glob":                {Category: CatSearch, DirKeys: []string{"dir_path", "path"}, GlobKeys: []string{"pattern"}},
		"search_file_content": {Category: CatSearch, DirKeys: []string{"dir_path", "path"}, GlobKeys: []string{"include"}},
		"grep_search":         {Category: CatSearch, DirKeys: []string{"dir_path", "path"}, GlobKeys: []string{"include", "include_pattern"}},
		"web_fetch":           {Category: CatFetch, TextURLKeys: []string{"prompt"}, URLKeys: []string{"url"}},
		"google_web_search":   {Category: CatWebSearch},
	},
	Pi: {
		"bash":  shellTool(),
		"read":  readTool("path"),
		"write": writeTool("path"),
		"edit":  writeTool("path"),
		"grep":  {Category: CatSearch, DirKeys: []string{"path"}, GlobKeys: []string{"glob"}},
		"find":  {Category: CatSearch, DirKeys: []string{"path"}, GlobKeys: []string{"pattern"}},
		"ls":    searchTool("path"),
	},
}

// splitQualified splits "server:tool".
func splitQualified(id string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(id, ":")
	return server, tool, ok && server != "" && tool != "" && !strings.Contains(tool, ":")
}

// MCPQualifiedIDs returns every reading of a harness MCP tool name
// "mcp__server__tool" as a qualified "server:tool" id: one per "__" the
// rest could split at, since server and tool names may both contain "__"
// (Claude Code plugin servers are "plugin_<plugin>_<server>"). ok is false
// when the name is not an MCP tool name.
func MCPQualifiedIDs(name string) (ids []string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found || rest == "" {
		return nil, false
	}
	for i := 0; i+2 < len(rest); i++ {
		if rest[i:i+2] != "__" {
			continue
		}
		server, tool := rest[:i], rest[i+2:]
		if server != "" && tool != "" {
			ids = append(ids, server+":"+tool)
		}
	}
	return ids, len(ids) > 0
}
