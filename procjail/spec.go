package procjail

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Spec describes one sandboxed command. The zero value is not usable:
// Command is required.
type Spec struct {
	// Command is the program to run; without a slash it is looked up in
	// the PATH of Env inside the sandbox.
	Command string
	// Args are the arguments after Command.
	Args []string
	// Env is the command's whole environment (see ProxyEnv).
	Env []string
	// Dir is the working directory inside; empty means the caller's.
	Dir string
	// Stdin, Stdout and Stderr are passed through; nil means /dev/null.
	// When Stdin is a terminal the command is put in the terminal's
	// foreground process group.
	Stdin, Stdout, Stderr *os.File
	// Forwards are the only ways out: listeners on 127.0.0.1 inside that
	// relay to host-side Unix sockets, or hand their connections to Pass.
	Forwards []Forward
	// Pass receives the connections of the "pass" forwards (Linux). It is
	// required with one and must not be shared between sandboxes.
	Pass *PassListener `json:"-"`
	// Inbound are the host's ways in (sandboxd run --publish): each
	// connection the caller hands over with Sandbox.PassInbound (its
	// descriptor, over a socket pair no path names) is relayed by the
	// init to 127.0.0.1:Port inside. Linux only.
	Inbound []Inbound
	// ResolvConf, when not empty, is bind-mounted read-only over
	// /etc/resolv.conf inside (see ResolvConf).
	ResolvConf string
	// AllowUnixSockets lists host pathname Unix sockets the command may
	// connect to. Every other host Unix socket is unreachable.
	AllowUnixSockets []string
	// RuntimeDir is the host directory under which Start keeps its
	// generated files for the sandbox's lifetime; empty means os.TempDir().
	RuntimeDir string
	// ReadOnlyPaths are host files or directories bind-mounted read-only
	// over themselves inside, so nothing in the sandbox can change them
	// (sandboxd passes the policy file's directory and its runtime
	// directory). Each must exist; a mount point cannot be renamed or
	// removed either, and the command has no capability to unmount it.
	ReadOnlyPaths []string
	// FileSystem is the command's view of the host filesystem; the zero
	// value leaves it as the host's (see FileSystem).
	FileSystem FileSystem
	// Proc is which /proc the sandbox gets (Linux; see ProcMode and
	// ProbeProc); empty means ProcFresh. The start fails (exit 125) when
	// the kernel refuses it: the init never picks another on its own.
	Proc ProcMode
	// Container, when set, runs the command in container mode (Linux; see
	// ContainerMode): no namespaces, a uid of its own. The init must have
	// been prestarted with PrestartOptions.Container.
	Container *ContainerMode
	// Hostname is the UTS name inside; empty means "sandbox".
	Hostname string
	// Ready, when set, is called while the sandbox is being set up, and
	// the command starts only after it returns nil, so that the caller can
	// finish its own setup (the proxies) meanwhile. An error aborts: the
	// command never starts and Start returns a *SetupError at step "ready".
	Ready func() error `json:"-"`
	// skipMountLayer (tests only) leaves out the filesystem's mount layer
	// and keeps its Landlock domain, to show that Landlock alone holds
	// the writes.
	skipMountLayer bool
	// OnCreateRefused, when set, is called (on a goroutine of its own,
	// one call at a time) for each creation the create gate refused
	// (FileSystem.CreateGuard). Linux.
	OnCreateRefused func(CreateRefusal) `json:"-"`
	// OnOpenRefused, when set, is called (on the same goroutine as
	// OnCreateRefused) for each open the open gate's seccomp route
	// refused (FileSystem.OpenGuard). Linux.
	OnOpenRefused func(OpenRefusal) `json:"-"`
	// OpenGate, when set (Linux, nested mode), marks the sandbox's mounts
	// once the init has set them up ("ready") and decides every open
	// there from then on; the command starts only after the marks are
	// placed, and a mark that fails aborts the start (step "open gate").
	// The caller closes it once the sandbox has ended.
	OpenGate *OpenGate `json:"-"`
	// InitPath is the binary re-executed as the sandbox's init; it must
	// dispatch InitCommand to RunInit before parsing flags. Empty means
	// /proc/self/exe.
	InitPath string
}

// Forward is one relay from a loopback port inside the sandbox to a
// host-side Unix stream socket.
//
// Network "tcp": each TCP connection accepted on 127.0.0.1:InsidePort is
// relayed byte for byte over a new connection to Target.
//
// Network "udp": each datagram received on 127.0.0.1:InsidePort is sent over
// a new stream connection to Target framed with a two-byte big-endian length
// (the DNS-over-TCP framing of RFC 1035 section 4.2.2); one framed reply is
// read back and returned to the sender as a datagram. A DNS server listening
// for TCP on Target therefore serves the sandbox's UDP DNS.
//
// Network "pass" (Linux): each TCP connection accepted on
// 127.0.0.1:InsidePort is handed, itself (its descriptor), to Spec.Pass
// with the process behind it (PassedConn.Peer); no bytes are relayed and
// Target is empty.
//
// Network "capture" (Linux): every TCP connection from inside to an
// address that is not loopback is redirected to 127.0.0.1:InsidePort (or
// [::1]) and handed to the proxy at Target as a proxy request by the name
// its first bytes carry, with Authorization as its Proxy-Authorization;
// other packets to such addresses are dropped (see capture_linux.go). On
// macOS it is not set up: the Seatbelt profile refuses such connections.
type Forward struct {
	InsidePort uint16 `json:"insidePort"`
	Network    string `json:"network"`
	Target     string `json:"target"`
	// Authorization is the proxy's Proxy-Authorization value (capture
	// only).
	Authorization string `json:"authorization,omitempty"`
	// Attribute names the process inside behind each connection (or
	// datagram), for the audit: "http" (tcp, the proxy's forward) in its
	// first request (PeerHeader); "dns" (the DNS proxy's forwards) in a
	// frame before the query's (PeerFrame). The capture always does.
	Attribute string `json:"attribute,omitempty"`
}

// Inbound is one port inside the sandbox that the host reaches.
type Inbound struct {
	Port uint16 `json:"port"`
}

// Validate reports the first problem in s as an error naming the field.
func (s *Spec) Validate() error {
	if s.Command == "" {
		return fmt.Errorf("command: must not be empty")
	}
	if strings.ContainsRune(s.Command, 0) {
		return fmt.Errorf("command: contains NUL")
	}
	seen := map[string]int{}
	passes := 0
	for i, f := range s.Forwards {
		p := fmt.Sprintf("forwards[%d]", i)
		if f.InsidePort == 0 {
			return fmt.Errorf("%s.insidePort: must not be 0", p)
		}
		if f.Network != "tcp" && f.Network != "udp" && f.Network != "capture" && f.Network != "pass" {
			return fmt.Errorf("%s.network: %q is not tcp, udp, capture or pass", p, f.Network)
		}
		if f.Network == "pass" {
			if f.Target != "" {
				return fmt.Errorf("%s.target: must be empty for a pass forward", p)
			}
			if s.Pass == nil {
				return fmt.Errorf("%s: a pass forward needs Spec.Pass", p)
			}
			if passes++; passes > 1 {
				return fmt.Errorf("%s: only one pass forward", p)
			}
		} else if !filepath.IsAbs(f.Target) {
			return fmt.Errorf("%s.target: %q is not an absolute path", p, f.Target)
		}
		key := fmt.Sprintf("%s/%d", f.Network, f.InsidePort)
		if j, dup := seen[key]; dup {
			return fmt.Errorf("%s: %s duplicates forwards[%d]", p, key, j)
		}
		seen[key] = i
	}
	for i, in := range s.Inbound {
		if in.Port == 0 {
			return fmt.Errorf("inbound[%d]: port 0", i)
		}
	}
	for i, u := range s.AllowUnixSockets {
		if !filepath.IsAbs(u) || filepath.Clean(u) != u {
			return fmt.Errorf("allowUnixSockets[%d]: %q is not a clean absolute path", i, u)
		}
	}
	if err := s.FileSystem.Validate(); err != nil {
		return err
	}
	if strings.ContainsAny(s.Hostname, "\x00/") {
		return fmt.Errorf("hostname: %q is not a valid host name", s.Hostname)
	}
	return nil
}

// ResolvConf returns the /etc/resolv.conf content that points the sandbox's
// resolver at the DNS forwarder on 127.0.0.1:53.
func ResolvConf() string {
	return "# generated by sandboxd: the only resolver is the sandbox's DNS proxy\nnameserver 127.0.0.1\noptions attempts:2 timeout:2\n"
}

// InitCommand is the hidden internal subcommand through which Start
// re-executes the calling binary as the sandbox's init. A binary that uses
// Start must call RunInit when os.Args[1] == InitCommand, before parsing
// flags or doing anything else.
const InitCommand = "__init"

// ConnectCommand is the hidden subcommand that tunnels stdin/stdout through
// the sandbox's CONNECT proxy (the ssh ProxyCommand of GIT_SSH_COMMAND); a
// binary dispatches it to RunConnect.
const ConnectCommand = "__connect"

// PrestartOptions are what a sandbox's init is started with before its
// Spec is known (Prestart): the descriptors the sandbox will have (nil:
// /dev/null), the init binary (Spec.InitPath) and the pass listener
// (Spec.Pass).
type PrestartOptions struct {
	Stdin, Stdout, Stderr *os.File
	InitPath              string
	Pass                  *PassListener
	// Container starts the init without namespaces, for a Spec with
	// Container set (see ContainerMode).
	Container bool
}
