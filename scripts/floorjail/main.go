//go:build linux

// Command floorjail is the floor of sandboxd's start-up design, for
// scripts/bench-run: a Go supervisor that re-executes itself as
// the init of the namespaces sandboxd makes (user, with root's identity
// mapped; mount, pid, network, IPC, UTS), where the init mounts a fresh /proc
// and runs COMMAND, and both wait for it. It has none of sandboxd's layers
// (no proxy, filesystem layer, /dev, forwards, Landlock or seccomp), so its
// time and memory are what two Go process starts and the namespaces cost on
// this machine: what would remain of `sandboxd run` if every layer were
// free. It is a measuring tool, not a sandbox.
//
//	floorjail COMMAND [ARG...]
//
// Any failure exits 125, as sandboxd's does; otherwise COMMAND's exit code.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

const initArg = "__floorjail_init"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floorjail COMMAND [ARG...]")
		os.Exit(125)
	}
	if os.Args[1] == initArg {
		os.Exit(runInit(os.Args[2:]))
	}
	os.Exit(supervise(os.Args[1:]))
}

// supervise starts the init in new namespaces and returns its exit code.
func supervise(argv []string) int {
	self, err := os.Executable()
	if err != nil {
		return fail("locating this binary: %v", err)
	}
	c := exec.Command(self, append([]string{initArg}, argv...)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	if os.Getuid() != 0 {
		all = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	}
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings: all,
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return fail("starting the init: %v", err)
	}
	return 0
}

// runInit is PID 1 inside: a private mount tree, a fresh /proc, then the
// command, waited for.
func runInit(argv []string) int {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fail("making / private: %v", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fail("mounting /proc: %v", err)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return fail("running %s: %v", argv[0], err)
	}
	return 0
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "floorjail: "+format+"\n", args...)
	return 125
}
