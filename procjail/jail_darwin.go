//go:build darwin

package procjail

// The macOS launcher: the command runs under /usr/bin/sandbox-exec with the
// profile of seatbelt_profile.go, in its own process group that is killed
// whole when the command exits. The proxy forwards listen on the host's
// 127.0.0.1:InsidePort (Seatbelt can name a port, not a host); "udp"
// forwards are not used: Seatbelt denies mDNSResponder, so names are
// resolved only by the proxy. Seatbelt offers no containment of processes
// that leave the process group (setsid), unlike the Linux PID namespace.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Sandbox is a running sandboxed command. Its methods are safe for
// concurrent use.
type Sandbox struct {
	cmd       *exec.Cmd
	listeners []net.Listener
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
		return nil, err
	}
	dnsPorts := map[uint16]bool{}
	for _, f := range spec.Forwards {
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
	profile, err := SeatbeltProfile(SeatbeltArgs{ProxyPorts: ports, AllowUnixSockets: spec.AllowUnixSockets, ReadOnlyPaths: readOnly})
	if err != nil {
		return fail(stepErr("seatbelt profile", err))
	}
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return fail(stepErr("sandbox-exec", err))
	}
	args := append([]string{"sandbox-exec", "-p", profile, "--", spec.Command}, spec.Args...)
	cmd := &exec.Cmd{Path: "/usr/bin/sandbox-exec", Args: args, Env: spec.Env, Dir: spec.Dir,
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

// Wait waits for the command and returns its exit status (128+N for a
// signal); the process group has been killed when it returns.
func (s *Sandbox) Wait() (int, error) { <-s.done; return s.code, s.err }

// Signal forwards sig to the command's process group.
func (s *Sandbox) Signal(sig os.Signal) error {
	return syscall.Kill(-s.cmd.Process.Pid, sig.(syscall.Signal))
}

// RunInit is not used on macOS (nothing is re-executed).
func RunInit() int {
	fmt.Fprintln(os.Stderr, "sandboxd: internal command; not for direct use")
	return 125
}
