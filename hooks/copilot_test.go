package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrustCopilotFolder: trust goes into config.json's trustedFolders
// the way Copilot writes the file (a // comment header, then JSON), keeping
// the header and the other settings; a parent folder covers its children.
func TestTrustCopilotFolder(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, "config.json")
	header := "// User settings belong in settings.json.\n// This file is managed automatically.\n"
	os.WriteFile(cfg, []byte(header+`{"firstLaunchAt": "2026-12-01T10:04:00.000Z", "trustedFolders": ["/srv/other"]}`), 0o600)
	if copilotTrusted(home, "/work/proj") {
		t.Fatal("trusted before")
	}
	if err := trustCopilotFolder(home, "/work/proj", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(b), header) || !strings.Contains(string(b), `"firstLaunchAt"`) || !strings.Contains(string(b), `"/srv/other"`) {
		t.Errorf("header or settings lost:\n%s", b)
	}
	for dir, want := range map[string]bool{"/work/proj": true, "/work/proj/sub": true, "/work/projx": false, "/work": false, "/srv/other/a": true} {
		if got := copilotTrusted(home, dir); got != want {
			t.Errorf("trusted(%s) = %v, want %v", dir, got, want)
		}
	}
	// Idempotent.
	trustCopilotFolder(home, "/work/proj", time.Unix(0, 0))
	b2, _ := os.ReadFile(cfg)
	if string(b2) != string(b) {
		t.Errorf("second trust changed the file:\n%s", b2)
	}
	// A file that is not JSON after its header is left alone.
	os.WriteFile(cfg, []byte(header+"{not json"), 0o600)
	if err := trustCopilotFolder(home, "/work/p2", time.Unix(0, 0)); err == nil {
		t.Error("rewrote a config it cannot read")
	}
}

// TestCopilotMCPIDs: "<server>-<tool>" reads at every "-", and Copilot's
// native tools are never MCP tools.
func TestCopilotMCPIDs(t *testing.T) {
	ids, ok := copilotMCPIDs(Call{Tool: "my-db-query"}, nil, nil)
	if !ok || strings.Join(ids, ",") != "my:db-query,my-db:query" {
		t.Errorf("ids %v", ids)
	}
	if _, ok := copilotMCPIDs(Call{Tool: "read_bash"}, nil, nil); ok {
		t.Error("native tool read as MCP")
	}
	if _, ok := copilotMCPIDs(Call{Tool: "-x"}, nil, nil); ok {
		t.Error("leading dash read as MCP")
	}
}
