//go:build darwin

package procjail

// The macOS launcher: the command runs under /usr/bin/sandbox-exec with the
// profile of seatbelt_profile.go, in its own process group that is killed
// whole when the command exits. The proxy forwards listen on the host's
// 127.0.0.1:InsidePort (Seatbelt can name a port, not a host); "udp"
// forwards are not used: Seatbelt denies mDNSResponder, so names are
// resolved only by the proxy. Seatbelt offers no containment of processes
// that leave the process group (setsid), unlike the Linux PID namespace.
//
// With Spec.FileSystem.Confine the profile enforces the filesystem model
// (see seatbeltFileSystem): the command gets a fresh temporary directory
// of its own under os.TempDir() (the per-user $TMPDIR) as its TMPDIR,
// removed when the sandbox ends; /tmp itself is not writable. There is no
// overlay: HomeOverlay only makes the usual cache directories below it
// writable, and what is written there lands on the host, where Linux
// discards it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sandbox is a running sandboxed command. Its methods are safe for
// concurrent use.
type Sandbox struct {
	cmd       *exec.Cmd
	listeners []net.Listener
	tempDir   string // the command's TMPDIR, removed at the end; "" for none
	done      chan struct{}
	code      int
	err       error
}

// Start starts the command under sandbox-exec (see the file comment).
func Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, stepErr("spec", err)
	}
	var ports []uint16
	sb := &Sandbox{done: make(chan struct{})}
	fail := func(err error) (*Sandbox, error) {
		for _, l := range sb.listeners {
			l.Close()
		}
		removeTempDir(sb.tempDir)
		return nil, err
	}
	if len(spec.Inbound) > 0 {
		// Seatbelt has no way in that would carry only the host's
		// connections: refused rather than published open.
		return nil, stepErrf("spec", "inbound ports (--publish) are not supported on macOS")
	}
	dnsPorts := map[uint16]bool{}
	for _, f := range spec.Forwards {
		if f.Network == "pass" {
			return nil, stepErrf("spec", "pass forwards are not supported on macOS")
		}
		if f.Network == "udp" {
			dnsPorts[f.InsidePort] = true
		}
	}
	for _, f := range spec.Forwards {
		// A port forwarded for UDP too is the DNS forwarder: not used here
		// (nothing resolves inside; the proxy resolves).
		if f.Network != "tcp" || dnsPorts[f.InsidePort] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.InsidePort))
		if err != nil {
			return fail(stepErr(fmt.Sprintf("forward tcp/%d", f.InsidePort), err))
		}
		sb.listeners = append(sb.listeners, ln)
		ports = append(ports, f.InsidePort)
		go func(target string) {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					u, err := net.Dial("unix", target)
					if err != nil {
						return
					}
					defer u.Close()
					go io.Copy(u, c)
					io.Copy(c, u)
				}()
			}
		}(f.Target)
	}
	var readOnly []string
	for _, p := range spec.ReadOnlyPaths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return fail(stepErr("read-only path "+p, err))
		}
		readOnly = append(readOnly, abs)
	}
	env := spec.Env
	if spec.FileSystem.Confine {
		// Seatbelt matches resolved paths: /private/var/folders/..., not
		// /var/folders/....
		dir, err := os.MkdirTemp("", "sandboxd-tmp-")
		if err != nil {
			return fail(stepErr("temporary directory", err))
		}
		sb.tempDir = dir
		if sb.tempDir, err = filepath.EvalSymlinks(dir); err != nil {
			sb.tempDir = dir
			return fail(stepErr("temporary directory", err))
		}
		env = withTMPDIR(env, sb.tempDir)
	}
	// As on Linux, protected and hidden paths that do not exist are left
	// out: their parents stay creatable (git init makes .git/hooks).
	fsys := spec.FileSystem
	fsys.Protected, fsys.Hidden = existing(fsys.Protected), existing(fsys.Hidden)
	profile, err := SeatbeltProfile(SeatbeltArgs{ProxyPorts: ports, AllowUnixSockets: spec.AllowUnixSockets, ReadOnlyPaths: readOnly,
		FileSystem: fsys, TempDir: sb.tempDir})
	if err != nil {
		return fail(stepErr("seatbelt profile", err))
	}
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return fail(stepErr("sandbox-exec", err))
	}
	args := append([]string{"sandbox-exec", "-p", profile, "--", spec.Command}, spec.Args...)
	cmd := &exec.Cmd{Path: "/usr/bin/sandbox-exec", Args: args, Env: env, Dir: spec.Dir,
		Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		return fail(stepErr("start sandbox-exec", err))
	}
	sb.cmd = cmd
	go func() {
		err := cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, l := range sb.listeners {
			l.Close()
		}
		removeTempDir(sb.tempDir)
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				sb.code = 128 + int(ws.Signal())
			} else {
				sb.code = ws.ExitStatus()
			}
		} else {
			sb.code, sb.err = 125, err
		}
		close(sb.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-sb.done:
		}
	}()
	return sb, nil
}

// withTMPDIR returns env (nil: this process's environment) with TMPDIR
// set to dir, any other TMPDIR removed.
func withTMPDIR(env []string, dir string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+dir)
}

// removeTempDir removes the command's temporary directory, making the
// directories the command left unwritable or unreadable writable again
// first if it has to. Processes that left the process group may still be
// writing there; what they write afterwards stays.
func removeTempDir(dir string) {
	if dir == "" || os.RemoveAll(dir) == nil {
		return
	}
	// WalkDir visits a directory before it reads it, so the chmod comes
	// first.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			unix.Fchmodat(unix.AT_FDCWD, p, 0o700, unix.AT_SYMLINK_NOFOLLOW)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// Wait waits for the command and returns its exit status (128+N for a
// signal); the process group has been killed when it returns.
func (s *Sandbox) Wait() (int, error) { <-s.done; return s.code, s.err }

// Close returns once Wait would: nothing outlives the command here.
func (s *Sandbox) Close() { <-s.done }

// Signal forwards sig to the command's process group.
func (s *Sandbox) Signal(sig os.Signal) error {
	return syscall.Kill(-s.cmd.Process.Pid, sig.(syscall.Signal))
}

// RunInit is not used on macOS (nothing is re-executed).
func RunInit() int {
	fmt.Fprintln(os.Stderr, "sandboxd: internal command; not for direct use")
	return 125
}

// existing returns the paths of l that exist.
func existing(l []string) []string {
	var out []string
	for _, p := range l {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// PassInbound is refused on macOS: Start refuses Spec.Inbound there.
func (s *Sandbox) PassInbound(i int, c syscall.Conn) error {
	return errors.New("inbound ports are not supported on macOS")
}
