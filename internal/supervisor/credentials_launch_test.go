package supervisor

import (
	"fmt"
	"testing"

	"github.com/barry-rocks/sandbox/hooks"
)

func TestLaunchAPIKeyCredentials(t *testing.T) {
	const key = "sk-ant-api03-0123456789abcdef"
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	piKeys := map[string]string{"GEMINI_API_KEY": "AIza" + key, "ANTHROPIC_API_KEY": key, "OPENAI_API_KEY": "sk-" + key}
	for _, tc := range []struct {
		name     string
		spec     LaunchSpec
		env      map[string]string
		declared map[string]bool
		want     string
	}{
		{"key for the default host", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key}, nil,
			"[{ANTHROPIC_API_KEY [api.anthropic.com]  []}]"},
		{"both variables, a gateway", LaunchSpec{Harness: hooks.ClaudeCode, APIHosts: []string{"Gateway.Example.test"}},
			map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": key + "x", "ANTHROPIC_BASE_URL": "https://gateway.example.test"}, nil,
			"[{ANTHROPIC_API_KEY [gateway.example.test]  []} {ANTHROPIC_AUTH_TOKEN [gateway.example.test]  []}]"},
		{"plain-http base URL: none", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "HTTP://127.0.0.1:8080"}, nil, "[]"},
		{"--pass-api-key: none", LaunchSpec{Harness: hooks.Codex, PassAPIKey: true}, map[string]string{"OPENAI_API_KEY": key}, nil, "[]"},
		{"a test's short key: none", LaunchSpec{Harness: hooks.Gemini}, map[string]string{"GEMINI_API_KEY": "test"}, nil, "[]"},
		{"declared already", LaunchSpec{Harness: hooks.Gemini}, map[string]string{"GEMINI_API_KEY": key}, map[string]bool{"GEMINI_API_KEY": true}, "[]"},
		{"codex", LaunchSpec{Harness: hooks.Codex}, map[string]string{"OPENAI_API_KEY": key}, nil, "[{OPENAI_API_KEY [api.openai.com]  []}]"},
		{"gemini, a gateway", LaunchSpec{Harness: hooks.Gemini, APIHosts: []string{"gw.example.test"}}, map[string]string{"GEMINI_API_KEY": key, "GOOGLE_API_KEY": key}, nil,
			"[{GEMINI_API_KEY [gw.example.test]  []} {GOOGLE_API_KEY [gw.example.test]  []}]"},
		// Pi: each key goes to its own provider's host, only when the
		// launch reaches it; the others are passed as they are, never
		// given to another provider.
		{"pi, default host: Gemini's key alone", LaunchSpec{Harness: hooks.Pi}, piKeys, nil,
			"[{GEMINI_API_KEY [generativelanguage.googleapis.com]  []}]"},
		{"pi, --api-host api.anthropic.com", LaunchSpec{Harness: hooks.Pi, APIHosts: []string{"API.Anthropic.com"}}, piKeys, nil,
			"[{ANTHROPIC_API_KEY [api.anthropic.com]  []}]"},
		{"pi, two providers", LaunchSpec{Harness: hooks.Pi, APIHosts: []string{"api.openai.com", "api.anthropic.com"}}, piKeys, nil,
			"[{ANTHROPIC_API_KEY [api.anthropic.com]  []} {OPENAI_API_KEY [api.openai.com]  []}]"},
		{"pi, a gateway: none", LaunchSpec{Harness: hooks.Pi, APIHosts: []string{"gw.example.test"}}, piKeys, nil, "[]"},
		{"pi, the provider's key unset", LaunchSpec{Harness: hooks.Pi, APIHosts: []string{"api.openai.com"}}, map[string]string{"ANTHROPIC_API_KEY": key}, nil, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(tc.spec.apiKeyCredentials(tc.declared, env(tc.env))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestLaunchPlainHTTPNote: a plain-http base URL is said on stderr when it
// keeps a key out of the credentials: only for keys that are set, long
// enough to have been credentials and not declared otherwise.
func TestLaunchPlainHTTPNote(t *testing.T) {
	const key = "sk-ant-api03-0123456789abcdef"
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	plain := "http://127.0.0.1:8080"
	for _, tc := range []struct {
		name     string
		spec     LaunchSpec
		env      map[string]string
		declared map[string]bool
		want     string
	}{
		{"one key", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": plain}, nil,
			"sandboxd: ANTHROPIC_BASE_URL is plain http://: ANTHROPIC_API_KEY is passed to the harness as it is, not as a credential"},
		{"two keys", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": key, "ANTHROPIC_BASE_URL": " HTTP://gw"}, nil,
			"sandboxd: ANTHROPIC_BASE_URL is plain http://: ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are passed to the harness as they are, not as credentials"},
		{"codex", LaunchSpec{Harness: hooks.Codex}, map[string]string{"CODEX_API_KEY": key, "OPENAI_BASE_URL": plain}, nil,
			"sandboxd: OPENAI_BASE_URL is plain http://: CODEX_API_KEY is passed to the harness as it is, not as a credential"},
		{"https", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "https://gw"}, nil, ""},
		{"no key set", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_BASE_URL": plain}, nil, ""},
		{"a test's short key", LaunchSpec{Harness: hooks.Gemini}, map[string]string{"GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": plain}, nil, ""},
		{"declared", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": plain}, map[string]bool{"ANTHROPIC_API_KEY": true}, ""},
		{"--pass-api-key", LaunchSpec{Harness: hooks.ClaudeCode, PassAPIKey: true}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": plain}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.plainHTTPNote(tc.declared, env(tc.env)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
