//go:build linux

package procjail

// Child side of the namespace boundary: the sandbox's PID 1. See
// messages.go for the sequence and the names of the steps.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunInit is the sandbox's init. It must be called, and its result passed
// to os.Exit, when os.Args[1] == InitCommand, before any flag parsing. It
// returns 125 when setup fails (the command was never started), otherwise
// the command's exit status (128+N for a signal).
func RunInit() int {
	initProcs.base = runtime.GOMAXPROCS(0)
	growProcs(0)
	ctl := os.NewFile(controlFD, "control")
	if ctl == nil {
		fmt.Fprintln(os.Stderr, "sandboxd: internal command; not for direct use")
		return 125
	}
	fail := func(err error) int {
		fmt.Fprintf(ctl, "error %s\n", oneLine(err.Error()))
		ctl.Close()
		return 125
	}
	var spec initSpec
	// The supervision loop and the create gate both write to the parent.
	ctlw := &lockedWriter{w: ctl}
	spec.reportRefusal = func(r CreateRefusal) { io.WriteString(ctlw, refusedLine(r)) }
	spec.reportOpenRefusal = func(r OpenRefusal) { io.WriteString(ctlw, openRefusedLine(r)) }
	go warmSpecCodec()
	raw, err := readSpec(ctl)
	if err != nil {
		return fail(stepErr("read spec", err))
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fail(stepErr("read spec", err))
	}
	// Subscribe before the command starts so that no SIGCHLD or forwarded
	// signal is missed. The first subscription starts os/signal's loop
	// (~0.4 ms here), which the setup does not need: it runs beside it.
	sigs := make(chan os.Signal, 64)
	subscribed := make(chan struct{})
	go func() {
		signal.Notify(sigs, parentDeathSignal, unix.SIGCHLD, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGWINCH,
			unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
		// The signals Go's runtime crashes on when a process sends them
		// (kill -ABRT 1 from inside printed a traceback and ended the
		// sandbox): taken and dropped. A real fault in the init is still
		// the runtime's (a synchronous signal is not a sent one).
		absorbed := make(chan os.Signal, 16)
		signal.Notify(absorbed, unix.SIGABRT, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL,
			unix.SIGTRAP, unix.SIGSYS, unix.SIGSTKFLT)
		go func() {
			for range absorbed {
			}
		}()
		close(subscribed)
	}()
	setup := setupInside
	if spec.Container != nil {
		setup = setupShared
	}
	// Container mode's rules go with a start that fails before the
	// command runs: nothing of the uid runs yet.
	unrule := func() {
		if spec.Container != nil {
			RemoveUIDRules(spec.Container.UID)
		}
	}
	gate, err := setup(&spec)
	if err != nil {
		unrule()
		return fail(err)
	}

	// Message 3, then wait for "go" (message 4); anything else aborts.
	fmt.Fprintf(ctl, "ready\n")
	goMsg, gateFDs, err := readGo(controlFD)
	if err != nil || goMsg != "go\n" {
		unrule()
		return 125
	}
	if err := holdOpenGate(spec.OpenGate, gateFDs); err != nil {
		unrule()
		return fail(err)
	}
	if spec.OpenGate && gate != nil && gate.create != nil && gate.create.openDecide != nil && !gate.create.openRoute {
		gate.create.openGroup = gateFDs[0]
	}

	<-subscribed
	pid, err := startCommand(&spec, gate)
	if err != nil {
		unrule()
		return fail(err)
	}
	if gate != nil {
		go gate.serve()
	}
	fmt.Fprintf(ctlw, "ok %d\n", pid)
	// The control socket stays open: the init tells the parent when the
	// command stops (job control) and what the create gate refused, until
	// it exits.
	defer ctl.Close()
	return superviseInit(pid, sigs, ctlw, spec.Container)
}

// parentDeathSignal is the init's parent death signal in a pid namespace
// of its own (namespaceAttr); superviseInit takes it as sandboxd's death.
// The command cannot send it (kill -PWR 1 fails with EPERM, checked by hand).
const parentDeathSignal = unix.SIGPWR

// readGo reads message 4 from the control socket fd: "go\n" and the
// descriptors it carries (SCM_RIGHTS, close-on-exec).
func readGo(fd int) (string, []int, error) {
	var msg []byte
	var fds []int
	buf := make([]byte, 3)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for len(msg) < 3 {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf[:3-len(msg)], oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", fds, err
		}
		if oobn > 0 {
			cms, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return "", fds, err
			}
			for _, cm := range cms {
				if got, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, got...)
				}
			}
		}
		if n == 0 {
			return "", fds, io.EOF
		}
		msg = append(msg, buf[:n]...)
	}
	return string(msg), fds, nil
}

// holdOpenGate checks the descriptors message 4 carried: with the open
// gate, exactly one, of a fanotify group, which the init keeps open (never
// read, never inherited: close-on-exec) until it exits, after every other
// process of the sandbox (superviseInit); without it, none.
func holdOpenGate(want bool, fds []int) error {
	if !want {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if len(fds) > 0 {
			return stepErrf("open gate", "%d descriptors came with go, and no open gate", len(fds))
		}
		return nil
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return stepErrf("open gate", "%d descriptors came with go; want the group's", len(fds))
	}
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fds[0])); err != nil || l != "anon_inode:[fanotify]" {
		unix.Close(fds[0])
		return stepErrf("open gate", "the descriptor that came with go is %q (%v), not a fanotify group", l, err)
	}
	return nil
}

// superviseInit reaps every child on SIGCHLD, forwards other signals to the
// command's process group, tells the parent on ctl when the command stops
// (Ctrl-Z: the parent then gives the terminal back and stops itself), and
// when the command exits kills everything left in the sandbox and returns
// the command's status.
func superviseInit(mainPID int, sigs <-chan os.Signal, ctl io.Writer, container *ContainerMode) int {
	for sig := range sigs {
		if sig == parentDeathSignal && container == nil {
			// sandboxd died: every other process is killed and reaped
			// before this one exits and closes its descriptor of the open
			// gate's group (a process with SIGKILL pending that waits
			// for a permission answer gets an error, not the file).
			unix.Kill(-1, unix.SIGKILL)
			for {
				if _, err := unix.Wait4(-1, nil, 0, nil); err != nil && err != unix.EINTR {
					break
				}
			}
			return 125
		}
		if sig != unix.SIGCHLD {
			// The command leads its own process group.
			if err := unix.Kill(-mainPID, sig.(syscall.Signal)); err == unix.ESRCH {
				unix.Kill(mainPID, sig.(syscall.Signal))
			}
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WUNTRACED, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			if pid != mainPID {
				continue
			}
			if ws.Stopped() {
				fmt.Fprintf(ctl, "stopped %d\n", int(ws.StopSignal()))
				continue
			}
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			// Kill everything left (setsid, double forks) and reap it:
			// once nothing is left, the parent gets the status ("exit")
			// and goes on while the kernel takes the namespaces down
			// with this process (~1 ms).
			// In container mode there is no namespace to take down:
			// every process of the command's uid is killed (never -1
			// from here, which would be the whole container), and its
			// netfilter rules removed.
			if container != nil {
				if err := endShared(container); err != nil {
					fmt.Fprintf(os.Stderr, "sandboxd: %s\n", oneLine(err.Error()))
				}
			} else {
				unix.Kill(-1, unix.SIGKILL)
			}
			for {
				if _, err := unix.Wait4(-1, nil, 0, nil); err != nil && err != unix.EINTR {
					break
				}
			}
			fmt.Fprintf(ctl, "exit %d\n", code)
			return code
		}
	}
	return 125
}

// setupInside runs the setup steps that need no command, in order, and
// returns the Unix socket gate (nil when no host socket is allowed). What
// the filesystem layer may cover (a private /tmp, a mask) is opened before
// it: the forward targets, the allowed sockets, the resolv.conf source.
func setupInside(s *initSpec) (*unixGate, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, stepErr("init not dumpable", err)
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return nil, stepErr("hostname", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, stepErr("private mounts", err)
	}
	// The network's setup (loopback, the capture's routes and netfilter
	// rules: about 0.7 ms) runs beside the mounts': the two touch
	// different namespaces, and the listeners (forwards, below) wait for
	// it.
	netc := make(chan error, 1)
	go func() { netc <- setupNetwork(s.Forwards) }()
	if err := pinForwards(s); err != nil {
		return nil, err
	}
	gate, err := startInboundAndGate(s)
	if err != nil {
		return nil, err
	}
	// The generated files (resolv.conf, hosts), opened and read now, as
	// the filesystem layer may cover the runtime directory, and bound
	// once the mounts are made.
	var generated []generatedFile
	for _, g := range []generatedFile{{src: s.ResolvConfPath, dst: "/etc/resolv.conf"}, {src: s.HostsPath, dst: "/etc/hosts"}} {
		if g.src == "" {
			continue
		}
		if err := g.open(); err != nil {
			return nil, err
		}
		defer unix.Close(g.fd)
		generated = append(generated, g)
	}
	if !s.SkipMountLayer {
		if err := setupFileSystem(&s.FileSystem); err != nil {
			return nil, err
		}
	}
	if err := mountProc(s.Proc); err != nil {
		return nil, err
	}
	if err := setupDev(); err != nil {
		return nil, err
	}
	for _, g := range generated {
		if err := g.bind(); err != nil {
			return nil, err
		}
	}
	var readOnly []string
	for _, p := range kernelStatePaths {
		if _, err := os.Lstat(p); err == nil {
			readOnly = append(readOnly, p)
		}
	}
	for _, p := range s.ReadOnlyPaths {
		if _, err := os.Lstat(p); err != nil && s.FileSystem.Confine {
			continue // out of sight inside (a private /tmp covers it)
		}
		readOnly = append(readOnly, p)
	}
	if err := bindReadOnly(readOnly...); err != nil {
		return nil, err
	}
	if err := <-netc; err != nil {
		return nil, err
	}
	if err := startForwards(s); err != nil {
		return nil, err
	}
	return gate, nil
}

// pinForwards pins each relayed forward's target socket (pinSocket), before
// anything is mounted over its directory.
func pinForwards(s *initSpec) error {
	if len(s.ForwardIDs) != len(s.Forwards) {
		return stepErrf("forwards", "%d forwards but %d socket identities", len(s.Forwards), len(s.ForwardIDs))
	}
	for i, f := range s.Forwards {
		if f.Network == "pass" {
			continue
		}
		pinned, err := pinSocket(f.Target, s.ForwardIDs[i])
		if err != nil {
			return stepErr(fmt.Sprintf("forward %s/%d", f.Network, f.InsidePort), err)
		}
		s.Forwards[i].Target = pinned
	}
	return nil
}

// startInboundAndGate starts the relays of the host's inbound connections
// and opens the allowed Unix sockets (the gate, nil when none is).
func startInboundAndGate(s *initSpec) (*unixGate, error) {
	if len(s.Inbound) > 0 {
		if err := startInbound(s.Inbound); err != nil {
			return nil, stepErr("inbound", err)
		}
	}
	gate, err := startUnixGate(s, s.reportRefusal)
	if err != nil {
		return nil, stepErr("unix socket gate", err)
	}
	return gate, nil
}

// startForwards checks the working directory and starts the forwards'
// listeners, the last setup steps.
func startForwards(s *initSpec) error {
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", s.Dir)
		}
		return stepErr("working directory", err)
	}
	// The names the sandbox's DNS answers gave, for the capture.
	names := newDNSNames()
	for _, f := range s.Forwards {
		if err := startForward(f, names, s.PassFD); err != nil {
			return stepErr(fmt.Sprintf("forward %s/%d", f.Network, f.InsidePort), err)
		}
	}
	return nil
}

// pinSocket opens the socket at path (O_PATH), checks that it is the one
// Start checked (want), and returns a name that reaches that socket
// whatever happens to path later. The host directory that holds the
// targets is read-only inside this sandbox but not inside another one of
// the same user, which could otherwise replace a target with a symlink to
// any host socket (Docker's, an SSH agent's) and have this sandbox's
// forwarder relay there.
func pinSocket(path string, want fileID) (string, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || uint64(st.Dev) != want.Dev || st.Ino != want.Ino {
		unix.Close(fd)
		return "", fmt.Errorf("%s is no longer the socket sandboxd created", path)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil
}

// bindReadOnly bind-mounts each path over itself read-only, with every
// mount below it, and checks from the inside that each whole new tree is
// (one read of the mount table for all of them: each read costs about
// 0.2 ms with the host's mounts cloned).
func bindReadOnly(paths ...string) error {
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return stepErr("read-only "+p, err)
		}
		if err := makeReadOnly(p); err != nil {
			return stepErr("read-only "+p, err)
		}
	}
	all, err := readMounts()
	if err != nil {
		return stepErr("read-only paths", err)
	}
	for _, p := range paths {
		if err := checkReadOnly(all, p); err != nil {
			return stepErr("read-only "+p, err)
		}
	}
	return nil
}

// kernelStatePaths hold the host kernel's global settings. They are made
// read-only inside (those that exist): a sandbox started by root runs as
// the host's uid 0 without capabilities, and sysctl and sysfs writes are
// checked only against the file's owner, so kernel.core_pattern = "|prog"
// or /sys/kernel/uevent_helper would run a program as host root outside
// every namespace, and /sys/power/state would suspend the machine.
var kernelStatePaths = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/sys"}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	id, parent int
	root       string // the mount's root within its filesystem
	point      string
	readOnly   bool
	fsType     string // the field after the separator " - "
}

// mountTree returns the mount visible at path (the last one mounted
// there) and every mount below it, from /proc/self/mountinfo, parents
// before children.
func mountTree(path string) ([]mountEntry, error) {
	all, err := readMounts()
	if err != nil {
		return nil, err
	}
	return treeAt(all, path)
}

// readMounts reads /proc/self/mountinfo, in its order.
func readMounts() ([]mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var all []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		if len(strings.Fields(line)) < 6 {
			continue
		}
		m, ok := parseMountLine(line)
		if !ok {
			return nil, fmt.Errorf("mountinfo: %q", line)
		}
		all = append(all, m)
	}
	return all, nil
}

// parseMountLine parses one line of /proc/self/mountinfo.
func parseMountLine(line string) (mountEntry, bool) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return mountEntry{}, false
	}
	var m mountEntry
	var err1, err2 error
	m.id, err1 = strconv.Atoi(f[0])
	m.parent, err2 = strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return mountEntry{}, false
	}
	m.root = unescapeMountinfo(f[3])
	m.point = unescapeMountinfo(f[4])
	m.readOnly = f[5] == "ro" || strings.HasPrefix(f[5], "ro,")
	for i := 6; i+1 < len(f); i++ {
		if f[i] == "-" {
			m.fsType = f[i+1]
			break
		}
	}
	return m, true
}

// treeAt returns, from the mount table all, the mount visible at path (the
// last one mounted there) and every mount below it, parents before
// children.
func treeAt(all []mountEntry, path string) ([]mountEntry, error) {
	top := -1
	for i, m := range all {
		if m.point == path {
			top = i
		}
	}
	if top < 0 {
		return nil, fmt.Errorf("%s is not a mount point", path)
	}
	tree := []mountEntry{all[top]}
	in := map[int]bool{all[top].id: true}
	for grew := true; grew; {
		grew = false
		for _, m := range all {
			if !in[m.id] && in[m.parent] {
				in[m.id], grew = true, true
				tree = append(tree, m)
			}
		}
	}
	return tree, nil
}

// unescapeMountinfo undoes the octal escapes (\040 ...) of a mountinfo
// path.
func unescapeMountinfo(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out = append(out, byte(v))
				i += 3
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

// remountFlags are the flags of a read-only bind remount of path that keep
// the flags the kernel locked on its source mount.
func remountFlags(path string) uintptr {
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return flags
	}
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return flags
}

// generatedFile is a file sandboxd generated (src, in its runtime
// directory) for dst inside: /etc/resolv.conf, /etc/hosts.
type generatedFile struct {
	src, dst string
	fd       int    // src, O_PATH (open)
	want     []byte // src's content (open)
}

// open reads src and holds it by a descriptor, before the filesystem
// layer can cover it.
func (g *generatedFile) open() error {
	var err error
	if g.want, err = os.ReadFile(g.src); err != nil {
		return stepErr("mount "+g.dst, err)
	}
	if g.fd, err = unix.Open(g.src, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
		return stepErr("mount "+g.dst, err)
	}
	return nil
}

// bind binds the file (through the init's descriptor) over dst
// read-only and checks that dst reads what src held.
func (g generatedFile) bind() error {
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(g.fd), g.dst, "", unix.MS_BIND, ""); err != nil {
		return stepErr("mount "+g.dst, err)
	}
	// A remount must keep the flags the kernel locked on the source mount.
	flags := remountFlags(g.dst)
	if err := unix.Mount("", g.dst, "", flags, ""); err != nil {
		return stepErr("remount "+g.dst+" read-only", err)
	}
	got, err := os.ReadFile(g.dst)
	if err != nil || !bytes.Equal(got, g.want) {
		return stepErrf("check "+g.dst, "content differs from the generated file (%v)", err)
	}
	return nil
}

// setupNetwork brings the loopback up, checks that it is the only
// interface, and sets up the capture's routes and rules (when forwards has
// a capture).
func setupNetwork(forwards []Forward) error {
	if err := loopbackUp(); err != nil {
		return stepErr("loopback up", err)
	}
	if err := checkInterfaces(); err != nil {
		return stepErr("check interfaces", err)
	}
	for _, f := range forwards {
		if f.Network == "capture" {
			if err := setupCapture(f.InsidePort); err != nil {
				return stepErr(fmt.Sprintf("forward %s/%d", f.Network, f.InsidePort), err)
			}
		}
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// checkInterfaces checks from the inside that the only interface is lo, up.
func checkInterfaces() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
		return fmt.Errorf("want only lo up, have %v", names)
	}
	return nil
}

// startCommand starts the command from a dedicated OS thread that first
// sets no_new_privs, drops every capability and installs the seccomp
// filter: the child inherits that thread's state. The thread is never
// unlocked, so it ends with its goroutine.
func startCommand(s *initSpec, gate *unixGate) (int, error) {
	type result struct {
		pid int
		err error
	}
	// Only 0, 1 and 2 reach the command: whatever else the init holds
	// (the control socket, listeners, descriptors sandboxd inherited) is
	// closed on exec.
	if err := cloexecFrom(3); err != nil {
		return 0, stepErr("close descriptors", err)
	}
	// The command's Landlock ruleset, made from the paths once: the
	// create gate's threads restrict themselves with the same one
	// (createGate.landlockRuleset), whenever they start.
	ll := landlockFor(&s.FileSystem)
	var ruleset, abi int
	var err error
	if gate != nil && gate.create != nil {
		ruleset, abi, err = gate.create.landlockRuleset() // the gate's to keep
	} else if ruleset, abi, err = commandRuleset(ll); err == nil && ruleset >= 0 {
		defer unix.Close(ruleset)
	}
	if err != nil {
		return 0, stepErr("landlock", err)
	}
	resc := make(chan result, 1)
	// Not the main thread: a Landlock domain there would put the init
	// itself in the command's domain (see offMainThread).
	go offMainThread(func() {
		if s.TimerSlack > 0 {
			// The command's slack is sandboxd's, not the init's
			// (initTimerSlack): inherited by fork and kept by exec.
			// This thread ends with its goroutine; until then it
			// has the init's again.
			unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(s.TimerSlack), 0, 0, 0)
			defer unix.Prctl(unix.PR_SET_TIMERSLACK, initTimerSlack, 0, 0, 0)
		}
		o := seccompOptions{AllowUnix: gate != nil && gate.unixOn, CreateGate: gate != nil && gate.create != nil,
			OpenRoute: gate != nil && gate.create != nil && gate.create.openRoute}
		if err := hardenThread(o, gate, ll != nil, ruleset, abi, s.Container); err != nil {
			resc <- result{err: err}
			return
		}
		path, err := lookPath(s.Command, envValue(s.Env, "PATH"))
		if err != nil {
			resc <- result{err: stepErr("start command", err)}
			return
		}
		env := s.Env
		if env == nil {
			env = []string{}
		}
		// syscall.ForkExec, not os/exec: the init reaps by itself and
		// needs no os.Process (nor its one-time pidfd probe).
		pid, err := syscall.ForkExec(path, append([]string{s.Command}, s.Args...), &syscall.ProcAttr{
			Dir: s.Dir, Env: env, Files: []uintptr{0, 1, 2},
			Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: s.Foreground, Ctty: 0},
		})
		if err != nil {
			resc <- result{err: stepErr("start command", fmt.Errorf("%s: %w", s.Command, err))}
			return
		}
		resc <- result{pid: pid}
	})
	r := <-resc
	return r.pid, r.err
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPath finds file in the PATH given (not the init's own environment).
func lookPath(file, path string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", err
		}
		return file, nil
	}
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: not found", file)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%q: not found", p)
		}
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%q: permission denied", p)
	}
	return nil
}

// lockedWriter serializes whole writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "\r", " ") }

// cloexecFrom marks every descriptor >= low close-on-exec.
func cloexecFrom(low int) error {
	if err := unix.CloseRange(uint(low), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		var fd int
		if _, err := fmt.Sscanf(e.Name(), "%d", &fd); err == nil && fd >= low {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// The init's Go runtime, tuned for the gates. Each call a gate serves
// ends with threads of the init blocked in a syscall (the notification
// wait, a worker's eventfd read), each holding a P until Go's sysmon
// thread takes it back, and sysmon wakes every 20 µs meanwhile (for about
// a millisecond, and again whenever it takes one): on a small VM that
// polling was about half of the init's CPU per gated call
// (docs/benchmarks.md, "The init's runtime"). So:
//
//   - initTimerSlack, the timer slack of every thread of the init (set on
//     sandboxd's thread that forks it, startInit), lets the kernel
//     coalesce those sleeps. Nothing in the init needs a finer timer; the
//     runtime's own short sleeps (a spinning thread's 3 µs pause before
//     stealing, the stop-the-world's re-preemption) stretch to it too. The
//     command gets sandboxd's slack back (initSpec.TimerSlack).
//   - growProcs keeps a P free for the threads a gate blocks in a syscall
//     (initSpareProcs: the notification wait and the init's own; one more
//     per create-gate worker, up to maxProcsWorkers), so that a woken
//     thread does not wait for sysmon, which with the slack looks only
//     every millisecond or so, to take a P back. GOMAXPROCS bounds Go code
//     running at once, not threads: the kernel still shares the machine's
//     CPUs. The cap bounds what grows with it (the garbage collector's
//     dedicated workers are a quarter of it); past it a woken worker may
//     wait for sysmon.
const (
	initTimerSlack  = 1_000_000 // ns
	initSpareProcs  = 4
	maxProcsWorkers = 16
)

var initProcs struct {
	mu   sync.Mutex
	base int // GOMAXPROCS at start (the CPUs the init may use)
}

// growProcs sets GOMAXPROCS to the init's base, initSpareProcs and one per
// create-gate worker started so far (at most maxProcsWorkers), if that is
// more than it is. Each change stops the world once.
func growProcs(workers int) {
	initProcs.mu.Lock()
	defer initProcs.mu.Unlock()
	if n := initProcs.base + initSpareProcs + min(workers, maxProcsWorkers); n > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
}
