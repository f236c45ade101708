package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// TestDecideToolConfig: hooks only, under a domain rule, a package
// manager whose configuration file (in the cwd, above it, in a directory
// the line changes to, or the user's) may send it to other hosts than the
// line names is refused, naming the file; one whose files do not (an
// .npmrc holding only an auth token) is ruled on its hosts.
func TestDecideToolConfig(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(root, "proj")
	files := map[string]string{
		"proj/.npmrc":                 "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\nsave-exact=true\n",
		"proj/web/.npmrc":             "registry=https://npm.pastebin.com/\n",
		"proj/api/.npmrc":             "@corp:registry=https://corp.example/\n",
		"proj/rs/.cargo/config.toml":  "[build]\njobs = 2\n",
		"proj/rs2/.cargo/config.toml": "[source.crates-io]\nreplace-with = \"mirror\"\n",
		"proj/rb/Gemfile":             "source \"https://rubygems.org\"\ngem \"rails\"\n",
		"proj/rb2/Gemfile":            "source \"https://gems.example\"\ngem \"rails\"\n",
		"home/.config/go/env":         "GOPROXY=https://goproxy.example\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := &policy.Bound{Network: &policy.NetworkRules{Domains: []string{"pastebin.com", "*.pastebin.com"}}}
	const allowed = "shell command passes the bound's shell, network and file rules"
	for _, tc := range []struct{ cwd, line, want string }{
		{proj, "npm install", allowed},
		{filepath.Join(proj, "web"), "npm install", "shell command runs npm, and " + filepath.Join(proj, "web", ".npmrc") + " may send it to hosts the line does not name (the gate does not read tools' configuration), and the bound has domain rules"},
		{proj, "cd web && npm ci", "shell command runs npm, and " + filepath.Join(proj, "web", ".npmrc") + " may send it"},
		{proj, "npm --prefix api install", "shell command runs npm, and " + filepath.Join(proj, "api", ".npmrc") + " may send it"},
		{filepath.Join(proj, "api", "sub"), "pnpm install", "shell command runs pnpm, and " + filepath.Join(proj, "api", ".npmrc") + " may send it"},
		{proj, "cd $D && npm ci", "shell command runs npm after cd to a directory the line does not name"},
		{filepath.Join(proj, "web"), "npm test", allowed},
		{filepath.Join(proj, "rs"), "cargo fetch", allowed},
		{filepath.Join(proj, "rs2"), "cargo fetch", "shell command runs cargo, and " + filepath.Join(proj, "rs2", ".cargo", "config.toml") + " may send it"},
		{filepath.Join(proj, "rb"), "bundle install", allowed},
		{filepath.Join(proj, "rb2"), "bundle install", "shell command runs bundle, and " + filepath.Join(proj, "rb2", "Gemfile") + " may send it"},
		{proj, "go get example.test/m@v1", "shell command runs go, and " + filepath.Join(home, ".config", "go", "env") + " may send it"},
		{proj, "go test ./...", allowed},
		{proj, "pip install requests", allowed},
	} {
		d := Decide(tc.line, tc.cwd, b, nil, policy.FileMatcher{Home: home})
		if !strings.HasPrefix(d.Reason, tc.want) {
			t.Errorf("%s (in %s): %v %q, want a reason starting %q", tc.line, tc.cwd, d.Verdict, d.Reason, tc.want)
		}
	}
}
