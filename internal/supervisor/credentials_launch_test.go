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
	for _, tc := range []struct {
		name     string
		spec     LaunchSpec
		env      map[string]string
		declared map[string]bool
		want     string
	}{
		{"key for the default host", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key}, nil,
			"[{ANTHROPIC_API_KEY [api.anthropic.com] }]"},
		{"both variables, a gateway", LaunchSpec{Harness: hooks.ClaudeCode, APIHosts: []string{"Gateway.Example.test"}},
			map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": key + "x", "ANTHROPIC_BASE_URL": "https://gateway.example.test"}, nil,
			"[{ANTHROPIC_API_KEY [gateway.example.test] } {ANTHROPIC_AUTH_TOKEN [gateway.example.test] }]"},
		{"plain-http base URL: none", LaunchSpec{Harness: hooks.ClaudeCode}, map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "HTTP://127.0.0.1:8080"}, nil, "[]"},
		{"--pass-api-key: none", LaunchSpec{Harness: hooks.Codex, PassAPIKey: true}, map[string]string{"OPENAI_API_KEY": key}, nil, "[]"},
		{"a test's short key: none", LaunchSpec{Harness: hooks.Gemini}, map[string]string{"GEMINI_API_KEY": "test"}, nil, "[]"},
		{"declared already", LaunchSpec{Harness: hooks.Gemini}, map[string]string{"GEMINI_API_KEY": key}, map[string]bool{"GEMINI_API_KEY": true}, "[]"},
		{"codex", LaunchSpec{Harness: hooks.Codex}, map[string]string{"OPENAI_API_KEY": key}, nil, "[{OPENAI_API_KEY [api.openai.com] }]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(tc.spec.apiKeyCredentials(tc.declared, env(tc.env))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
