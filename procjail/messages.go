package procjail

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The parent/child message sequence, over the control socket that the
// parent donates to the child as file descriptor 3 (controlFD):
//
//  1. parent → child: initSpec as JSON, preceded by its length (4 bytes, big
//     endian). The spec never travels in argv or the environment: the
//     sandboxed tree can read /proc/1/cmdline and its own environment.
//  2. child: sets up, in this order, each step named in its error:
//     "read spec", "init not dumpable", "hostname", "private mounts",
//     "mount /proc" (or "container /proc"), "private /dev" (and "mount /dev", "mount /dev/pts", ...,
//     "check /dev"), "mount /etc/resolv.conf", "loopback up", "check
//     interfaces", "working directory", "forward <net>/<port>", "unix socket gate"
//     (which also makes the create gate).
//  3. child → parent: "ready\n", or "error <step>: <reason>\n" after which
//     the child exits 125.
//  4. parent → child: "go\n" once everything outside is ready too
//     (Spec.Ready); the parent sends it without waiting for message 3, and
//     the child reads it only after sending message 3. EOF instead means
//     "abort": the child exits 125 without starting the command. With
//     the open gate (initSpec.OpenGate) "go\n" carries, as SCM_RIGHTS, a
//     descriptor of the gate's fanotify group; without it the child fails
//     "open gate" (exit 125).
//  5. child: "close descriptors", "no new privileges", "drop capabilities",
//     "seccomp filter", "start command"; then child → parent: "ok <pid>\n"
//     (pid as seen inside) or "error <step>: <reason>\n" (exit 125).
//     After "ok", the child sends "stopped <signal>\n" (job control),
//     "refused <JSON CreateRefusal>\n" (the create gate), "openrefused
//     <JSON OpenRefusal>\n" (the open gate's seccomp route) and, last,
//     "exit <code>\n".
//
// EOF where a reply is due means the child died. After "ok" the child's exit
// status is the command's: its exit code, or 128+N when signal N killed it.

// controlFD is the control socket's descriptor number in the child;
// inboundFD, with Spec.Inbound, the socket the host's inbound connections
// come over (a two-byte index and the connection's descriptor each).
const (
	controlFD = 3
	inboundFD = 4
)

// initSpec is what the child needs, sent as message 1.
type initSpec struct {
	Command          string         `json:"command"`
	Args             []string       `json:"args"`
	Env              []string       `json:"env"`
	Dir              string         `json:"dir"`
	Forwards         []Forward      `json:"forwards"`
	ForwardIDs       []fileID       `json:"forwardIDs"` // the socket each Forwards[i].Target named when Start checked it
	Inbound          []Inbound      `json:"inbound,omitempty"`
	PassFD           int            `json:"passFD,omitempty"` // the pass forwards' socket pair (Spec.Pass); 0: none
	ResolvConfPath   string         `json:"resolvConfPath,omitempty"`
	HostsPath        string         `json:"hostsPath,omitempty"` // the generated /etc/hosts (hostsFile)
	ReadOnlyPaths    []string       `json:"readOnlyPaths,omitempty"`
	AllowUnixSockets []string       `json:"allowUnixSockets,omitempty"`
	Hostname         string         `json:"hostname"`
	Foreground       bool           `json:"foreground"` // stdin is a terminal
	FileSystem       FileSystem     `json:"fileSystem"`
	SkipMountLayer   bool           `json:"skipMountLayer,omitempty"` // tests only: Landlock alone
	Proc             ProcMode       `json:"proc,omitempty"`           // "" is ProcFresh
	Container        *ContainerMode `json:"container,omitempty"`      // container mode: no namespaces
	// OpenGate: message 4 carries a descriptor of the open gate's
	// fanotify group (SCM_RIGHTS), which the init holds until every other
	// process of the sandbox is dead (openGateFD).
	OpenGate bool `json:"openGate,omitempty"`
	// HostDevices are the devices of sandboxd's mounts (the host's), with
	// FileSystem.OpenGuard: a file on one of them has the identity the
	// plan recorded; any other (the home overlay's, the sandbox's tmpfs)
	// is compared by its inode number alone (the open route).
	HostDevices []uint64 `json:"hostDevices,omitempty"`
	// TimerSlack is the timer slack (ns) of the thread that started the
	// init, given back to the command: the init's own threads run with
	// initTimerSlack.
	TimerSlack uint64 `json:"timerSlack,omitempty"`

	// reportRefusal tells the parent what the create gate refused.
	reportRefusal func(CreateRefusal)
	// reportOpenRefusal tells the parent what the open route refused.
	reportOpenRefusal func(OpenRefusal)
}

// warmSpecCodec builds encoding/json's reflection caches for initSpec and
// every type in it. Their first use costs 0.2–0.4 ms in each process, and
// both the spec's encoding in sandboxd and its decoding in the init are on
// the start-up's critical path. Each side runs it on a goroutine
// of its own while it waits: sandboxd while the session is set up, the init
// while the spec is on its way. Encoding the zero value builds the encoders
// of the whole type graph, and with them the field lists decoding uses.
func warmSpecCodec() { json.Marshal(initSpec{}) }

// fileID identifies a file: its device and inode numbers.
type fileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// maxSpec bounds message 1.
const maxSpec = 16 << 20

// writeSpec writes message 1.
func writeSpec(w io.Writer, spec []byte) error {
	hdr := []byte{byte(len(spec) >> 24), byte(len(spec) >> 16), byte(len(spec) >> 8), byte(len(spec))}
	_, err := w.Write(append(hdr, spec...))
	return err
}

// readSpec reads message 1.
func readSpec(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
	if n > maxSpec {
		return nil, fmt.Errorf("spec of %d bytes is too large", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// readReply reads one reply line from the child (messages 3 and 5): want
// is "ready" or "ok"; "ok" carries the command's pid. An "error" line is
// returned as a *childError.
func readReply(br *bufio.Reader, want string) (pid int, err error) {
	line, rerr := br.ReadString('\n')
	if rerr != nil {
		if rerr == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, rerr
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		return 0, &childError{reason: rest}
	}
	switch {
	case want == "ready" && line == "ready":
		return 0, nil
	case want == "ok" && strings.HasPrefix(line, "ok "):
		if _, err := fmt.Sscanf(line[3:], "%d", &pid); err != nil || pid <= 0 {
			return 0, fmt.Errorf("bad reply from sandbox init: %q", line)
		}
		return pid, nil
	}
	return 0, fmt.Errorf("bad reply from sandbox init: %q (want %s)", line, want)
}

// childError is a setup failure reported by the child.
type childError struct{ reason string }

func (e *childError) Error() string { return e.reason }
