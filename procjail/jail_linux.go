//go:build linux

package procjail

// Parent side of the namespace boundary: create the namespaces by
// re-executing the binary as the sandbox's init, send it the spec (message
// 1), wait for its reply (message 3). See messages.go.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setupTimeout bounds the whole setup inside the sandbox.
const setupTimeout = 30 * time.Second

// Sandbox is a running sandboxed command. Its methods are safe for
// concurrent use.
type Sandbox struct {
	init      *initProc
	inbound   *net.UnixConn // to the init: the host's inbound connections (Spec.Inbound)
	insidePID int
	tty       *os.File      // the terminal the command was given, or nil
	done      chan struct{} // the command's status is known, nothing else is left
	released  chan struct{} // the init is reaped and the sandbox's files removed
	reported  chan int      // the init's "exit" report: the status, all else reaped
	code      int
	waitErr   error
	cleanup   func()
	container *ContainerMode // container mode's command identity, nil in nested mode
	gate      *OpenGate      // Spec.OpenGate: its failure kills the sandbox (status 125)
}

// initProc is the sandbox's init as seen from the parent. It is started
// with syscall.ForkExec and reaped by one goroutine, so that it is never
// signalled after it was reaped (its PID could be someone else's by then).
type initProc struct {
	pid    int
	mu     sync.Mutex
	reaped bool
	ws     unix.WaitStatus
	err    error
	exited chan struct{}
	// timerSlack is the slack of the thread that started the init, the
	// command's (initSpec.TimerSlack).
	timerSlack uint64
}

func startInit(path string, files []uintptr, container bool) (*initProc, error) {
	attr := namespaceAttr()
	if container {
		attr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	}
	// The init is forked from this thread with initTimerSlack, which
	// every thread of the init inherits (the Go runtime's sysmon
	// included, made before any code of the init runs; threads Go makes
	// meanwhile are cloned from its template thread, not this one); the
	// command gets this thread's own slack back (initSpec.TimerSlack).
	// A slack that reads 0 (a real-time thread's, whose slack the kernel
	// ignores) is left alone: 0 cannot be given back (prctl takes it as
	// "the default", which would be the init's). The thread is unlocked
	// after, not ended: Pdeathsig watches it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err == nil && slack > 0 {
		unix.Prctl(unix.PR_SET_TIMERSLACK, initTimerSlack, 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
	}
	pid, err := syscall.ForkExec(path, []string{"sandboxd", InitCommand}, &syscall.ProcAttr{
		Env: []string{}, Files: files, Sys: attr,
	})
	if err != nil {
		return nil, err
	}
	p := &initProc{pid: pid, exited: make(chan struct{}), timerSlack: uint64(slack)}
	go func() {
		var ws unix.WaitStatus
		var err error
		for {
			if _, err = unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		p.mu.Lock()
		p.reaped, p.ws, p.err = true, ws, err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

func (p *initProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return unix.Kill(p.pid, sig)
}

// kill kills the init (and so the whole sandbox) and waits for it.
func (p *initProc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.exited
}

// Start sets up the sandbox described by spec and starts the command in it.
// It returns only once the command has been started inside a complete
// sandbox; any failure before that is a *SetupError (or a *CommandError
// when the command cannot be executed) and nothing was run. Cancelling ctx
// kills the whole sandbox, during setup or after.
func Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	p, err := Prestart(PrestartOptions{Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr, InitPath: spec.InitPath, Pass: spec.Pass})
	if err != nil {
		return nil, err
	}
	return p.Start(ctx, spec)
}

// Prestarted is a sandbox's init started before its spec is known
// (Prestart): it creates the namespaces and starts up while the caller
// sets up the rest, then waits for Start.
type Prestarted struct {
	mu      sync.Mutex
	cmd     *initProc
	ctl     *os.File      // the parent's end of the control socket
	inbound *net.UnixConn // the parent's end of the inbound socket pair
	pass    *PassListener
	passFD  int
	stdin   *os.File
	used    bool
	// container: started without namespaces (PrestartOptions.Container).
	container bool
}

// Prestart starts a sandbox's init with the descriptors the sandbox will
// have. The init waits for Start; Close kills it if Start is never called.
func Prestart(o PrestartOptions) (*Prestarted, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, stepErr("control socket", err)
	}
	parentCtl := os.NewFile(uintptr(fds[0]), "control")
	childCtl := os.NewFile(uintptr(fds[1]), "control")
	defer childCtl.Close()
	p := &Prestarted{ctl: parentCtl, pass: o.Pass, stdin: o.Stdin}
	fail := func(err error) (*Prestarted, error) {
		p.Close()
		return nil, err
	}
	var files []uintptr
	for _, f := range []*os.File{o.Stdin, o.Stdout, o.Stderr} {
		if f == nil {
			null, err := os.Open(os.DevNull)
			if err != nil {
				return fail(stepErr("open /dev/null", err))
			}
			defer null.Close()
			f = null
		}
		files = append(files, f.Fd())
	}
	files = append(files, childCtl.Fd()) // controlFD
	// The host's inbound connections travel as descriptors over a socket
	// pair (inboundFD): no path another sandbox could swap.
	pfds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(stepErr("inbound socket", err))
	}
	pf, cf := os.NewFile(uintptr(pfds[0]), "inbound"), os.NewFile(uintptr(pfds[1]), "inbound")
	defer cf.Close()
	c, err := net.FileConn(pf)
	pf.Close()
	if err != nil {
		return fail(stepErr("inbound socket", err))
	}
	p.inbound = c.(*net.UnixConn)
	files = append(files, cf.Fd()) // inboundFD
	if o.Pass != nil {
		pf := o.Pass.childEnd()
		if pf == nil {
			return fail(stepErrf("pass", "the pass listener was already given to a sandbox, or closed"))
		}
		defer pf.Close()
		p.passFD = len(files)
		files = append(files, pf.Fd())
	}
	initPath := o.InitPath
	if initPath == "" {
		initPath = "/proc/self/exe"
	}
	if o.Container && os.Geteuid() != 0 {
		return fail(stepErr("container mode", ErrContainerModeNeedsRoot))
	}
	if p.cmd, err = startInit(initPath, files, o.Container); err != nil {
		if o.Container {
			return fail(stepErr("start init", err))
		}
		return fail(namespaceError(err))
	}
	p.container = o.Container
	go warmSpecCodec()
	return p, nil
}

// Close kills the init and closes its sockets, unless Start started the
// sandbox (which then owns them).
func (p *Prestarted) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used {
		return
	}
	p.used = true
	p.ctl.Close()
	if p.inbound != nil {
		p.inbound.Close()
	}
	if p.cmd != nil {
		p.cmd.kill()
	}
}

// Start is Start for this init: spec's Stdin, Stdout, Stderr, InitPath and
// Pass must be (or be left as) those given to Prestart. Any failure kills
// the init.
func (p *Prestarted) Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	p.mu.Lock()
	used := p.used
	p.used = true
	p.mu.Unlock()
	if used {
		return nil, stepErrf("sandbox init", "already started or closed")
	}
	sb, cleanup, err := p.start(ctx, spec)
	if err != nil {
		cleanup()
		return nil, err
	}
	return sb, nil
}

func (p *Prestarted) start(ctx context.Context, spec Spec) (*Sandbox, func(), error) {
	cmd, parentCtl := p.cmd, p.ctl
	// What the prestart holds: undone on a failure, the Sandbox's on
	// success (it keeps the init and the control socket; the inbound pair
	// when used).
	held := []func(){cmd.kill, func() { parentCtl.Close() }, func() { p.inbound.Close() }}
	cleanups := slices.Clone(held)
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	if spec.Pass == nil && p.pass != nil {
		spec.Pass = p.pass
	}
	if spec.Pass != p.pass {
		return nil, cleanup, stepErrf("spec", "pass: not the listener given to Prestart")
	}
	if err := spec.Validate(); err != nil {
		return nil, cleanup, stepErr("spec", err)
	}
	if spec.OpenGate != nil {
		// The open gate's pre-mark walks the host's files while the init
		// builds the sandbox (its view read from spec.FileSystem, the plan
		// the init is given below); Mark checks its roots once the view
		// exists.
		spec.OpenGate.startPreMark(spec.FileSystem)
	}
	var forwardIDs []fileID
	for _, f := range spec.Forwards {
		if f.Network == "pass" {
			forwardIDs = append(forwardIDs, fileID{})
			continue
		}
		id, err := checkSocket(f.Target)
		if err != nil {
			return nil, cleanup, stepErr(fmt.Sprintf("forward %s/%d", f.Network, f.InsidePort), err)
		}
		forwardIDs = append(forwardIDs, id)
	}
	is := initSpec{
		Command:          spec.Command,
		Args:             spec.Args,
		Env:              spec.Env,
		Dir:              spec.Dir,
		Forwards:         spec.Forwards,
		ForwardIDs:       forwardIDs,
		Inbound:          spec.Inbound,
		PassFD:           p.passFD,
		AllowUnixSockets: spec.AllowUnixSockets,
		Hostname:         spec.Hostname,
		FileSystem:       spec.FileSystem,
		SkipMountLayer:   spec.skipMountLayer,
		Proc:             spec.Proc,
		Container:        spec.Container,
		OpenGate:         spec.OpenGate != nil,
		TimerSlack:       cmd.timerSlack,
	}
	if spec.OpenGate != nil && spec.Container != nil {
		return nil, cleanup, stepErrf("open gate", "container mode has no mount namespace of its own to mark")
	}
	if len(spec.FileSystem.OpenGuard) > 0 || len(spec.FileSystem.MarkGuard) > 0 {
		// The open route and createMarked tell a file of the host's (a
		// bind mount's: the identity the plan recorded) by its device,
		// as the fanotify gate does (hostDevices).
		devs, err := hostDevices("/proc/self/mountinfo")
		if err != nil {
			return nil, cleanup, stepErr("open gate", err)
		}
		for d := range devs {
			is.HostDevices = append(is.HostDevices, d)
		}
	}
	if (spec.Container != nil) != p.container {
		return nil, cleanup, stepErrf("container mode", "the spec and the prestarted init disagree on container mode")
	}
	if spec.Container != nil && (spec.Container.UID == 0 || spec.Container.GID == 0 || !spec.FileSystem.Confine) {
		return nil, cleanup, stepErrf("container mode", "the command needs a uid and gid other than 0 and the filesystem's Landlock domain")
	}
	if is.Hostname == "" {
		is.Hostname = "sandbox"
	}
	if is.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, cleanup, stepErr("working directory", err)
		}
		is.Dir = wd
	}
	if p.stdin != nil && isForegroundTerminal(p.stdin) {
		is.Foreground = true
	}
	for _, rp := range spec.ReadOnlyPaths {
		abs, err := filepath.Abs(rp)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, cleanup, stepErr("read-only path "+rp, err)
		}
		is.ReadOnlyPaths = append(is.ReadOnlyPaths, abs)
	}
	if spec.ResolvConf != "" {
		dir, err := os.MkdirTemp(spec.RuntimeDir, "sandboxd-run-")
		if err != nil {
			return nil, cleanup, stepErr("runtime directory", err)
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		is.ResolvConfPath = filepath.Join(dir, "resolv.conf")
		if err := os.WriteFile(is.ResolvConfPath, []byte(spec.ResolvConf), 0o644); err != nil {
			return nil, cleanup, stepErr("write resolv.conf", err)
		}
		// Not in container mode (nothing is mounted there: the
		// container's own /etc/hosts names its hostname).
		if hosts := hostsFile("/etc/hosts", is.Hostname, spec.FileSystem.Hidden); hosts != nil && spec.Container == nil {
			is.HostsPath = filepath.Join(dir, "hosts")
			if err := os.WriteFile(is.HostsPath, hosts, 0o644); err != nil {
				return nil, cleanup, stepErr("write hosts", err)
			}
		}
	}
	specJSON, err := json.Marshal(is)
	if err != nil {
		return nil, cleanup, stepErr("encode spec", err)
	}
	var parentIn *net.UnixConn
	if len(spec.Inbound) > 0 {
		parentIn = p.inbound
	}

	type reply struct {
		pid int
		err error
	}
	// await runs one exchange with the child under ctx and the setup
	// deadline.
	deadline := time.NewTimer(setupTimeout)
	defer deadline.Stop()
	await := func(f func() (int, error)) (int, error) {
		c := make(chan reply, 1)
		go func() { pid, err := f(); c <- reply{pid, err} }()
		select {
		case r := <-c:
			return r.pid, r.err
		case <-ctx.Done():
			return 0, stepErr("sandbox init", ctx.Err())
		case <-deadline.C:
			return 0, stepErrf("sandbox init", "no reply within %v", setupTimeout)
		}
	}
	childFailed := func(err error) error {
		var ce *childError
		if errors.As(err, &ce) {
			step, msg, _ := strings.Cut(ce.reason, ": ")
			if step == "start command" {
				return commandError(spec.Command, msg)
			}
			return &SetupError{Step: step, Err: errors.New(msg)}
		}
		var se *SetupError
		if errors.As(err, &se) {
			return err
		}
		// The child died without a reply: report how.
		cmd.kill()
		return stepErrf("sandbox init", "died during setup (%s)", describeStatus(cmd.ws))
	}
	// Message 1, then — while the child sets up — the caller's own setup
	// (Spec.Ready), then message 4 right away: the child reads "go" as soon
	// as it is ready, without a round trip. Messages 3 and 5 come back.
	if err := writeSpec(parentCtl, specJSON); err != nil {
		return nil, cleanup, childFailed(fmt.Errorf("send spec: %w", err))
	}
	if spec.Ready != nil {
		if err := spec.Ready(); err != nil {
			return nil, cleanup, stepErr("ready", err) // the child reads EOF: exits 125
		}
	}
	br := bufio.NewReader(parentCtl)
	readyRead := false
	if spec.OpenGate != nil {
		// The open gate marks the sandbox's mounts as the init made
		// them: it waits for "ready", and the command starts (message 4)
		// only once the marks are placed and decided.
		if _, err := await(func() (int, error) { return readReply(br, "ready") }); err != nil {
			return nil, cleanup, childFailed(err)
		}
		readyRead = true
		if err := spec.OpenGate.Mark(cmd.pid); err != nil {
			return nil, cleanup, stepErr("open gate", err) // the child reads EOF: exits 125
		}
	}
	if spec.OpenGate != nil {
		// Message 4 with a descriptor of the group: the init holds the
		// group open until every other process of the sandbox is dead
		// (should sandboxd die first, the kernel would otherwise allow
		// every open waiting for, or coming after, its last close).
		if err := unix.Sendmsg(int(parentCtl.Fd()), []byte("go\n"), unix.UnixRights(spec.OpenGate.fd), nil, 0); err != nil {
			return nil, cleanup, stepErr("open gate", fmt.Errorf("give the init the group's descriptor: %w", err))
		}
	} else {
		// A child that already failed has closed its end; its reason is
		// still waiting in the socket, so a failed write here is only
		// read past.
		io.WriteString(parentCtl, "go\n")
	}
	pid, err := await(func() (int, error) {
		if !readyRead {
			if _, err := readReply(br, "ready"); err != nil {
				return 0, err
			}
		}
		return readReply(br, "ok")
	})
	if err != nil {
		if spec.OpenGate != nil && spec.OpenGate.Err() != nil {
			cmd.kill()
			return nil, cleanup, stepErr("open gate", spec.OpenGate.failWhy)
		}
		return nil, cleanup, childFailed(err)
	}
	r := reply{pid: pid}
	// Keep the init running and its control socket open (read below), and
	// the inbound socket when used; the rest (the runtime directory) goes
	// at exit.
	cleanups = cleanups[len(held):]
	if parentIn == nil {
		p.inbound.Close()
	} else {
		cleanups = append(cleanups, func() { parentIn.Close() })
	}
	sb := &Sandbox{init: cmd, insidePID: r.pid, container: spec.Container, done: make(chan struct{}), released: make(chan struct{}),
		reported: make(chan int, 1), cleanup: cleanup, inbound: parentIn, gate: spec.OpenGate}
	if is.Foreground {
		sb.tty = p.stdin
	}
	// The init reports the command's stops on the control socket until it
	// exits (then the read ends).
	go func() {
		defer parentCtl.Close()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if j, ok := strings.CutPrefix(strings.TrimSpace(line), "openrefused "); ok {
				var r OpenRefusal
				if json.Unmarshal([]byte(j), &r) == nil && spec.OnOpenRefused != nil {
					spec.OnOpenRefused(r)
				}
				continue
			}
			if j, ok := strings.CutPrefix(strings.TrimSpace(line), "refused "); ok {
				var r CreateRefusal
				if json.Unmarshal([]byte(j), &r) == nil && spec.OnCreateRefused != nil {
					spec.OnCreateRefused(r)
				}
				continue
			}
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "stopped "); ok {
				sig, _ := strconv.Atoi(n)
				sb.jobStopped(syscall.Signal(sig))
			}
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "exit "); ok {
				if code, err := strconv.Atoi(n); err == nil && code >= 0 && code <= 255 {
					sb.reported <- code
				}
				return
			}
		}
	}()
	go sb.wait(ctx)
	return sb, func() {}, nil
}

// jobStopped is job control for a command that owns the terminal: when it
// stops (Ctrl-Z), the terminal goes back to sandboxd's process group and
// sandboxd stops too, so the shell that started it sees the job stop and
// takes the terminal. When the shell continues sandboxd (fg, bg), the
// command continues, and gets the terminal back if sandboxd is in the
// foreground (fg; after bg it runs in the background like any job, and
// when it stops there the terminal stays the shell's).
//
// A command stopped for using the terminal (SIGTTIN, SIGTTOU) while
// sandboxd's group has it is given it again and continued, without
// stopping sandboxd: the shell hands the terminal to sandboxd's group on
// fg, possibly again after sandboxd passed it on. A report of a command
// that is no longer stopped (continued since) is stale and ignored.
func (s *Sandbox) jobStopped(sig syscall.Signal) {
	if s.tty == nil {
		return // not started in the terminal's foreground: nothing to give back
	}
	pid := s.commandHostPID()
	if pid > 0 && !processStopped(pid) {
		return
	}
	fd := int(s.tty.Fd())
	// Setting the terminal's process group from the background raises
	// SIGTTOU unless it is ignored.
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err == nil && pg == unix.Getpgrp() && (sig == syscall.SIGTTIN || sig == syscall.SIGTTOU) && pid > 0 {
		unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pid)
		s.Signal(syscall.SIGCONT)
		return
	}
	if err == nil && pid > 0 && pg == pid {
		unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp())
	}
	stopSelf()
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg == unix.Getpgrp() && pid > 0 {
		unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pid)
	}
	s.Signal(syscall.SIGCONT)
	// A report queued while sandboxd was stopped (the command was
	// continued from outside and stopped again) must find the command
	// running, or it would stop sandboxd again right after fg: wait,
	// briefly, until the continue has taken.
	for i := 0; pid > 0 && i < 40 && processStopped(pid); i++ {
		time.Sleep(5 * time.Millisecond)
	}
}

// stopSelf stops sandboxd (every thread, as SIGSTOP does) and returns once
// it is continued. The signal goes to the calling thread: a thread takes
// its own pending signals before it returns to user space, so tgkill
// returns only after the stop. kill(getpid()) would not do: the kernel
// wakes another thread (the main one) to take the signal, and the caller
// runs on meanwhile, here into continuing the command while the shell
// takes the terminal.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}

// processStopped reports whether process pid is stopped (job control, or
// traced while stopped): its state in /proc/PID/stat is T or t.
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

// PassInbound hands the init the host's connection c for Spec.Inbound[i]:
// the init relays it to that port inside. c stays the caller's to close
// (the init holds its own descriptor).
func (s *Sandbox) PassInbound(i int, c syscall.Conn) error {
	if s.inbound == nil {
		return errors.New("the sandbox has no inbound ports")
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		_, _, serr = s.inbound.WriteMsgUnix([]byte{byte(i >> 8), byte(i)}, unix.UnixRights(int(fd)), nil)
	})
	if err != nil {
		return err
	}
	return serr
}

// commandHostPID is the command's PID in sandboxd's PID namespace (the
// leader of its process group): the init's child whose innermost PID is
// the command's. 0 when it cannot be found.
func (s *Sandbox) commandHostPID() int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", s.init.pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", s.init.pid, t.Name()))
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + c + "/status")
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(st), "\n") {
				if f := strings.Fields(strings.TrimPrefix(l, "NSpid:")); strings.HasPrefix(l, "NSpid:") && len(f) > 0 && f[len(f)-1] == strconv.Itoa(s.insidePID) {
					pid, _ := strconv.Atoi(c)
					return pid
				}
			}
		}
	}
	return 0
}

func (s *Sandbox) wait(ctx context.Context) {
	defer close(s.released)
	var gateFailed <-chan struct{} // nil: never
	if s.gate != nil {
		gateFailed = s.gate.Failed()
	}
	select {
	case <-ctx.Done():
		s.init.kill()
	case <-gateFailed:
		// The gate killed the init already (its pidfd); this makes sure.
		s.init.kill()
	case <-s.init.exited:
	case code := <-s.reported:
		// Every process but the init is gone and reaped: the status is
		// the command's, and the init's own exit (the namespaces coming
		// down) need not hold the caller up (Close waits for it).
		s.code = code
		close(s.done)
		select {
		case <-s.init.exited:
		case <-ctx.Done():
			s.init.kill()
		}
		s.cleanup()
		return
	}
	if s.container != nil {
		// The init is gone before it could end the session (killed, or
		// crashed): no PID namespace takes the command's processes with
		// it, so they are killed here, and the uid's rules removed.
		if err := KillUID(s.container.UID); err == nil {
			RemoveUIDRules(s.container.UID)
		}
	}
	ws := s.init.ws
	switch {
	case s.gate != nil && s.gate.Err() != nil:
		// The open gate failed and killed the sandbox: the session's
		// failure, not the command's status.
		s.code, s.waitErr = 125, s.gate.Err()
	case s.init.err != nil:
		s.code, s.waitErr = 125, s.init.err
	case ws.Signaled():
		s.code = 128 + int(ws.Signal())
	default:
		s.code = ws.ExitStatus()
	}
	s.cleanup()
	close(s.done)
}

func describeStatus(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

// Wait waits for the command to exit and returns its exit status: its exit
// code, or 128+N when signal N killed it. Every process left in the
// sandbox has been killed and reaped when Wait returns; the init may still
// be exiting (Close waits for it).
func (s *Sandbox) Wait() (int, error) {
	<-s.done
	return s.code, s.waitErr
}

// Close waits for the sandbox to be gone entirely: the init reaped, its
// namespaces down, the files Start made removed. Call it after Wait.
func (s *Sandbox) Close() { <-s.released }

// Done is closed when Wait would return.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Signal sends sig to the sandbox's init, which forwards it to the command's
// process group (SIGKILL kills the whole sandbox).
func (s *Sandbox) Signal(sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v is not a syscall.Signal", sig)
	}
	return s.init.signal(ss)
}

// Kill kills the whole sandbox.
func (s *Sandbox) Kill() error { return s.Signal(syscall.SIGKILL) }

// InitPID is the host PID of the sandbox's init (its PID 1).
func (s *Sandbox) InitPID() int { return s.init.pid }

// CommandPID is the command's PID as seen inside the sandbox.
func (s *Sandbox) CommandPID() int { return s.insidePID }

func namespaceAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		// The init's parent death signal is one it catches (superviseInit):
		// it kills every other process of its pid namespace and reaps them
		// before it exits and closes its descriptor of the open gate's
		// group. SIGKILL would close the descriptor first (a process's
		// files go before its namespace's other processes are killed).
		// Before the command runs, the init ignores it (it is PID 1) and
		// reads EOF on the control socket instead.
		Pdeathsig: parentDeathSignal,
		// A process group of its own: a shell's SIGCONT (fg, bg) to
		// sandboxd's group must not reach the init, which would continue
		// the command before sandboxd gives it the terminal back (it then
		// reads, gets SIGTTIN and stops again). The command's signals go
		// through sandboxd (Sandbox.Signal).
		Setpgid: true,
	}
	if uid == 0 {
		// Root keeps its identity (every id it has maps to itself), but its
		// capabilities now belong to the new user namespace and reach
		// nothing outside. The ranges are those of root's own user
		// namespace (the whole range on a host, less in a container).
		attr.UidMappings = identityMappings("/proc/self/uid_map")
		attr.GidMappings = identityMappings("/proc/self/gid_map")
		attr.GidMappingsEnableSetgroups = true
		return attr
	}
	// An unprivileged caller maps only its own ids, to themselves; the init
	// gets the capabilities it needs inside through the ambient set, and
	// the command gets none. CAP_DAC_OVERRIDE is for the home overlay, whose
	// mount creates a mode-0 work directory (it reaches only files of the
	// caller's own uid, the only one mapped).
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP, unix.CAP_SYS_PTRACE}
	return attr
}

// namespaceError turns a failure to create the namespaces into a setup
// error; when user namespaces are refused it names the setting that
// refuses them.
func namespaceError(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.ENOSPC || errno == syscall.EINVAL || errno == syscall.EUSERS || errno == syscall.EACCES) {
		return &SetupError{Step: "create namespaces", Err: fmt.Errorf("%w: %v: %s", ErrUserNamespaces, errno, usernsHint(readFile, errno))}
	}
	return stepErr("create namespaces", err)
}

// checkSocket checks that path is a socket and returns its identity.
func checkSocket(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fileID{}, fmt.Errorf("%s is not a socket", path)
	}
	return fileID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// isForegroundTerminal reports whether f is the caller's controlling
// terminal with the caller's process group in the foreground (a background
// job must not take the terminal).
func isForegroundTerminal(f *os.File) bool {
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

func commandError(command, reason string) error {
	code := 126
	if strings.Contains(reason, "not found") || strings.Contains(reason, "no such file") {
		code = 127
	}
	return &CommandError{Command: command, Reason: reason, ExitCode: code}
}

// identityMappings maps every id of the current user namespace (as listed
// in its uid_map or gid_map) to itself; without the file, the whole range.
func identityMappings(path string) []syscall.SysProcIDMap {
	b, err := os.ReadFile(path)
	if err != nil {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	return parseIdentityMappings(string(b))
}

// hostsFile returns the /etc/hosts the sandbox gets: the host's (at
// path; its entries, as the host resolves them) and a line giving the
// sandbox's hostname a loopback address, as container runtimes do.
// Without it a lookup of the hostname (git's default identity, Java's
// InetAddress.getLocalHost, hostname -i) goes to the sandbox's DNS proxy,
// which refuses it: four denied lines a session for a git commit with no
// identity set. Nil, and the host's file is shown as before, when the
// host has no regular, readable /etc/hosts of at most maxHostsFile bytes,
// when hidden (a files.deny path at or above it or its target) says it
// is hidden, or when the name cannot be one line's field: a convenience
// never stops a session.
func hostsFile(path, hostname string, hidden []string) []byte {
	if hostname == "" || strings.IndexFunc(hostname, func(r rune) bool { return r <= ' ' || r == '#' || r > '~' }) >= 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	for _, h := range hidden {
		if under(path, h) || under(real, h) {
			return nil
		}
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxHostsFile {
		return nil
	}
	b, err := os.ReadFile(real)
	if err != nil || len(b) > maxHostsFile {
		return nil
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return append(b, "# added by sandboxd: the sandbox's hostname\n127.0.1.1\t"+hostname+"\n"...)
}

// maxHostsFile bounds the host's /etc/hosts that hostsFile copies (read
// by sandboxd and by the init at every start); a larger one (a blocklist)
// is shown as it is.
const maxHostsFile = 1 << 20
