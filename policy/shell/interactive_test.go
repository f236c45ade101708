package shell

import "testing"

// TestInteractiveReader: "bash --rcfile FILE" is not here: the classifier
// refuses it (a start-up file the line does not show), so the shell rules
// deny it before this check matters.
func TestInteractiveReader(t *testing.T) {
	for cmd, want := range map[string]string{
		"bash": "bash", "bash -i": "bash", "python3": "python3", "sh -s": "sh", "cd /x && node": "node",
		"bash -c 'ls'": "", "python3 x.py": "", "node -e 1": "", "ls": "", "git status": "", "psql -f q.sql": "",
		"ssh host": "", "ssh": "ssh",
		"bash -O extglob": "bash", "bash -o vi": "bash", "rbash": "rbash", "python3.11": "python3.11",
		"python3 -i x.py": "python3", "script -q /dev/null": "script", "script -c ls /dev/null": "", "tmux": "tmux", "vim x": "vim",
		"sudo -s": "sudo", "sudo ls": "", "su": "su", "nodejs": "nodejs", "ipython3": "ipython3",
	} {
		if got := InteractiveReader(cmd); got != want {
			t.Errorf("InteractiveReader(%q) = %q, want %q", cmd, got, want)
		}
	}
}
