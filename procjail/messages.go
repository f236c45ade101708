package procjail

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// The parent/child message sequence, over the control socket that the
// parent donates to the child as file descriptor 3 (controlFD):
//
//  1. parent → child: initSpec as JSON; the parent then shuts down its
//     write side, so EOF ends the spec. The spec never travels in argv or
//     the environment: the sandboxed tree can read /proc/1/cmdline and its
//     own environment.
//  2. child: sets up, in this order, each step named in its error:
//     "read spec", "init not dumpable", "hostname", "private mounts",
//     "mount /proc", "mount /etc/resolv.conf", "loopback up", "check
//     interfaces", "forward <net>/<port>", "unix socket gate", "harden
//     command", "start command".
//  3. child → parent: one line, "ok <pid>\n" once the command has started
//     (pid as seen inside), or "error <reason>\n" after which the child
//     exits 125 without starting the command.
//  4. EOF before a line means the child died during setup.
//
// After message 3 the child's exit status is the command's: its exit code,
// or 128+N when a signal N killed it.

// controlFD is the control socket's descriptor number in the child.
const controlFD = 3

// initSpec is what the child needs, sent as message 1.
type initSpec struct {
	Command          string    `json:"command"`
	Args             []string  `json:"args"`
	Env              []string  `json:"env"`
	Dir              string    `json:"dir"`
	Forwards         []Forward `json:"forwards"`
	ResolvConfPath   string    `json:"resolvConfPath,omitempty"`
	AllowUnixSockets []string  `json:"allowUnixSockets,omitempty"`
	Hostname         string    `json:"hostname"`
	Foreground       bool      `json:"foreground"` // stdin is a terminal
}

// readReply reads message 3. ok is true for "ok"; otherwise reason is the
// child's error text.
func readReply(r io.Reader) (pid int, err error) {
	line, rerr := bufio.NewReader(r).ReadString('\n')
	if rerr != nil {
		if rerr == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, rerr
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "ok "); ok {
		if _, err := fmt.Sscanf(rest, "%d", &pid); err != nil {
			return 0, fmt.Errorf("bad reply from sandbox init: %q", line)
		}
		return pid, nil
	}
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		return 0, &childError{reason: rest}
	}
	return 0, fmt.Errorf("bad reply from sandbox init: %q", line)
}

// childError is a setup failure reported by the child.
type childError struct{ reason string }

func (e *childError) Error() string { return e.reason }
