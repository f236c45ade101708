//go:build linux

package procjail

// The create gate. A file created in a write root lands on the host, and
// some names run or load there later (a .vscode/tasks.json, an .envrc, a
// git hook: a plant), or would be hidden from the command only by a scan
// at start (a .env that the command creates and the host fills later).
// The mount layer can hold only what exists at start, so creation itself
// is decided, at the time, by policy (FileSystem.CreateGuard, decided by
// CreateDecider), and refused with EACCES and one line to the parent.
//
// The mechanism mirrors the Unix socket gate (unixgate_linux.go): the
// seccomp filter sends every syscall that creates a name (open and openat
// only with O_CREAT, whose flags are a register; creat, mkdir(at),
// mknod(at), rename(at,at2), link(at), symlink(at), and bind when the
// command may make Unix sockets: a socket bound at a path is a name) to
// the init as a user notification. The init never lets the kernel carry on with the call
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE would read the path again after the
// check: another thread could rewrite it). It reads the path once, copies
// the caller's directory descriptor (pidfd_getfd) or opens its cwd and
// root through /proc, and resolves the path itself, one component at a
// time without following symlinks (a symlink's target is walked in turn,
// at most 40, as the kernel does; "/proc/self" and "/proc/thread-self"
// name the caller, not the init; /proc/PID's magic links are followed by
// the init, and one of the init's own is refused). The parent directory
// is held as a descriptor, the decision is on its path and the final
// name, and the call is made on that descriptor with the final name not
// followed (O_NOFOLLOW, O_EXCL): nothing can move between the check and
// the use. An open installs the new descriptor in the caller
// (SECCOMP_IOCTL_NOTIF_ADDFD, O_CLOEXEC as asked), then answers with its
// number (see respond).
//
// The calls are made on worker threads of the init that are the
// command's, as far as the kernel checks it: their own fs_struct
// (unshare(CLONE_FS)) with the caller's umask, no capabilities, the
// command's uid and gid (container mode), no_new_privs and the command's
// Landlock rules, in the same mount namespace. The owner, mode, default
// ACLs, the mount layer's read-only binds and Landlock's refusals are
// therefore what the kernel would give the caller. A caller whose fs ids
// differ from the workers' is refused (EPERM), and so is any failure of the
// gate itself: it fails closed.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

const (
	ioctlNotifAddfd = 0x40182103
	atFDCWD         = -100
	maxSymlinks     = 40 // the kernel's MAXSYMLINKS
	pathMax         = 4096
	// renameWalkLimit bounds the entries of a directory renamed into a
	// write root that the gate decides one by one; past it the rename is
	// refused.
	renameWalkLimit = 100000
	// maxCreateWorkers bounds the worker threads.
	maxCreateWorkers = 64
	// maxAsideOpens bounds the threads that open a FIFO outside the
	// pool (openAside); past it such opens wait for one, other calls do
	// not.
	maxAsideOpens = 1024
)

// createGate decides and performs the command's creations.
type createGate struct {
	decide    func(op, path string) (refused bool, rule, reason string)
	arch      seccompArch
	proc      ProcMode
	fs        *FileSystem
	as        *ContainerMode
	uid, gid  int // the workers' (the command's) ids
	report    func(CreateRefusal)
	mu        sync.Mutex
	queue     []func(ready bool) // jobs no idle worker took
	idle      []*createWorker    // workers waiting for a job, the last to wait last
	workers   atomic.Int32
	sharedFS  atomic.Bool // unshare(CLONE_FS) was refused (prepareThread)
	noOpenat2 atomic.Bool // openat2 was refused (dirsAtOnce)
	llOnce    sync.Once   // landlockRuleset
	llRuleset int
	llABI     int
	llErr     error
	aside     chan struct{} // a semaphore of maxAsideOpens
	procOnce  sync.Once
	procDev   uint64
	rootOnce  sync.Once
	root      int
	rootErr   error
	status    [4096]byte // the gate goroutine's buffer for /proc/TID/status (caller)
	// openDecide, when set, is the open gate's decider
	// (OpenGuardDecider): of the open route (FileSystem.OpenGuard,
	// openRoute: every open comes here, and each regular file opened is
	// decided by it, decideOpened), or of the fanotify gate
	// (FileSystem.MarkGuard: createMarked). Either way no name it
	// refuses is made, and no file it refuses is given another name
	// (decidePathAs, decideOpenable). openRefused asks it.
	openDecide func(path string, dev, ino uint64, known bool) (refused bool, rule, reason string)
	openRoute  bool
	reportOpen func(OpenRefusal)
	hostDevs   map[uint64]bool // initSpec.HostDevices: a file on one has the host's identity
	openRoots  []string        // FileSystem.OpenRoots: where opens are decided
	// openGroup is the fanotify open gate's group (the init's copy,
	// message 4), or -1: a file the gate makes for an open gets the
	// group's ignore mark before it is opened when openDecide, that
	// gate's decider, allows it (createMarked). Set before the command
	// starts.
	openGroup int
	// nameMu makes a rename's decisions and the rename one step (Lock)
	// for the command's other name-making calls (RLock: an open's
	// creation, createMarked's making and taking included, mkdir, mknod,
	// symlink, link, bind). A rename of a large directory holds it while
	// it decides every entry below (docs/limits.md).
	nameMu sync.RWMutex
}

// newCreateGate returns the gate for s, or nil when s has no create guard.
func newCreateGate(s *initSpec, report func(CreateRefusal)) (*createGate, error) {
	if len(s.FileSystem.CreateGuard) == 0 {
		if len(s.FileSystem.OpenGuard) > 0 {
			return nil, fmt.Errorf("the open route needs the create gate (no create guard)")
		}
		return nil, nil
	}
	if CreateDecider == nil {
		return nil, fmt.Errorf("no create decider in this binary")
	}
	decide, err := CreateDecider(s.FileSystem.CreateGuard)
	if err != nil {
		return nil, err
	}
	arch, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no filter for architecture %s", runtime.GOARCH)
	}
	c := &createGate{decide: decide, arch: arch, proc: s.Proc, fs: &s.FileSystem, as: s.Container,
		uid: os.Getuid(), gid: os.Getgid(), report: report, aside: make(chan struct{}, maxAsideOpens), openGroup: -1}
	if s.Container != nil {
		c.uid, c.gid = int(s.Container.UID), int(s.Container.GID)
	}
	if guard := s.FileSystem.OpenGuard; len(guard) > 0 || len(s.FileSystem.MarkGuard) > 0 {
		if OpenGuardDecider == nil {
			return nil, fmt.Errorf("no open guard decider in this binary")
		}
		c.openRoute = len(guard) > 0
		if !c.openRoute {
			guard = s.FileSystem.MarkGuard
		}
		if c.openDecide, err = OpenGuardDecider(guard); err != nil {
			return nil, err
		}
		c.reportOpen = s.reportOpenRefusal
		if c.reportOpen == nil {
			c.reportOpen = func(OpenRefusal) {}
		}
		if len(s.FileSystem.OpenRoots) == 0 {
			return nil, fmt.Errorf("an open guard with no open roots: no open would be decided")
		}
		c.openRoots = s.FileSystem.OpenRoots
		c.hostDevs = map[uint64]bool{}
		for _, d := range s.HostDevices {
			c.hostDevs[d] = true
		}
	}
	return c, nil
}

// handles says whether nr is one of the gate's syscalls.
func (c *createGate) handles(nr int32) bool {
	if nr <= 0 {
		return false
	}
	n := uint32(nr)
	return n == c.arch.Open || n == c.arch.Openat || n == c.arch.Bind || containsNr(c.arch.createSyscalls(), n)
}

func containsNr(l []uint32, n uint32) bool {
	for _, x := range l {
		if x == n {
			return true
		}
	}
	return false
}

// createWorker is one worker thread: it waits in read(2) on its own
// eventfd, and job is what it was woken for.
type createWorker struct {
	wake int
	job  func(ready bool)
}

// submit runs job on a worker thread (ready: the thread is the
// command's; otherwise job must fail the call): the idle worker that
// waited last, else the queue, taken by the first worker to finish or by
// one started for it (at most maxCreateWorkers). The workers wait in
// read(2) on an eventfd each, not on a channel: the kernel wakes that
// one thread directly, where a goroutine locked to its thread costs the
// scheduler a hand-off of its own (about 60 µs a call here). One eventfd
// each, not one shared: an eventfd's read wakes every thread waiting on
// it, and all but one went back to sleep (three context switches a call
// with three workers).
func (c *createGate) submit(job func(ready bool)) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		w := c.idle[n-1]
		c.idle = c.idle[:n-1]
		w.job = job
		c.mu.Unlock()
		var one [8]byte
		one[0] = 1 // native endian 1 (amd64, arm64)
		if _, err := unix.Write(w.wake, one[:]); err != nil {
			// Never seen: an eventfd's write fails only on overflow.
			c.report(CreateRefusal{Op: "worker", Rule: "create gate", Reason: oneLine("waking a worker: " + err.Error())})
		}
		return
	}
	c.queue = append(c.queue, job)
	start := c.workers.Load() < maxCreateWorkers
	c.mu.Unlock()
	if !start {
		return
	}
	growProcs(int(c.workers.Add(1)))
	if err := c.startWorker(); err != nil {
		// No thread to run it: a queued job fails here (fail closed).
		c.workers.Add(-1)
		c.report(CreateRefusal{Op: "worker", Rule: "create gate", Reason: oneLine(err.Error())})
		c.mu.Lock()
		var j func(bool)
		if n := len(c.queue); n > 0 {
			j = c.queue[n-1]
			c.queue = c.queue[:n-1]
		}
		c.mu.Unlock()
		if j != nil {
			j(false)
		}
	}
}

// next waits for a job (on worker w's thread): a queued one first, else
// w waits idle until submit hands it one.
func (c *createGate) next(w *createWorker) func(bool) {
	c.mu.Lock()
	if len(c.queue) > 0 {
		job := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		return job
	}
	c.idle = append(c.idle, w)
	c.mu.Unlock()
	var buf [8]byte
	for {
		if _, err := unix.Read(w.wake, buf[:]); err != nil && err != unix.EINTR {
			return nil
		} else if err != nil {
			continue
		}
		c.mu.Lock()
		job := w.job
		w.job = nil
		c.mu.Unlock()
		if job != nil {
			return job
		}
	}
}

// startWorker starts one worker thread, never the main thread (whose
// credentials and Landlock domain are the init's; see offMainThread).
func (c *createGate) startWorker() error {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("worker eventfd: %w", err)
	}
	w := &createWorker{wake: wake}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			c.work(w, started)
			return
		}
		go c.work(w, started)
		<-started
		runtime.UnlockOSThread()
	}()
	<-started
	return nil
}

// work makes the calling thread the command's and runs jobs on it for
// the init's life. The thread stays locked: Go never reuses it for
// anything else, and threads the runtime starts meanwhile are cloned from
// its template thread, not from this one.
func (c *createGate) work(w *createWorker, started chan struct{}) {
	runtime.LockOSThread()
	err := c.prepareThread()
	close(started)
	if err != nil {
		c.report(CreateRefusal{Op: "worker", Rule: "create gate", Reason: oneLine(err.Error())})
	}
	for {
		job := c.next(w)
		if job == nil {
			return
		}
		job(err == nil)
	}
}

// prepareThread gives the calling thread the command's view of the
// kernel's checks (see the top of this file).
func (c *createGate) prepareThread() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		// A container's seccomp profile may refuse unshare (Docker's
		// allows it with CAP_SYS_ADMIN only): the workers then share the
		// init's umask, set to 0, and apply the caller's to the mode
		// themselves, which differs from the kernel only under a
		// directory with a default ACL (where the kernel ignores the
		// umask; docs/limits.md).
		c.sharedFS.Store(true)
		unix.Umask(0)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if c.as != nil {
		if err := setThreadIDs(c.as.UID, c.as.GID); err != nil {
			return err
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	ruleset, _, err := c.landlockRuleset()
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if ruleset >= 0 {
		if err := restrictLandlockSelf(ruleset); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	return nil
}

// landlockRuleset is the command's Landlock ruleset and the kernel's ABI,
// made once (-1: no Landlock), before the command starts (startCommand,
// which restricts the command with it too): every worker and aside thread
// restricts itself with this one. Made again from the
// paths for each thread, as it was, a worker started once the command
// ran took a write root's path as it was then: in container mode,
// where nothing is mounted, a command that emptied a write root it could
// remove and put a symlink to / in its place gave the next worker write
// access to all of / (a helper's review).
func (c *createGate) landlockRuleset() (ruleset, abi int, err error) {
	c.llOnce.Do(func() {
		c.llRuleset, c.llABI, c.llErr = commandRuleset(landlockFor(c.fs))
	})
	return c.llRuleset, c.llABI, c.llErr
}

// asideOpen is an open that may block for good (a FIFO with no peer),
// made outside the pool: obj is the FIFO (O_PATH), flags the open's.
type asideOpen struct {
	obj   int
	flags int
	// pidfd is the caller thread's (non-blocking, the aside's to close),
	// or -1.
	pidfd int
}

// openAside opens a FIFO on a thread of its own, prepared as a worker and
// ended after the call, so that opens with no peer (which block, as the
// caller's would) never hold the pool's workers: at most maxAsideOpens at
// once, later ones wait on their own goroutine. Once the caller is gone
// (killed: its pidfd polls readable, or valid, asked every aside tick,
// says its call is withdrawn) the gate opens the FIFO itself for reading
// and writing without blocking, which releases the blocked open, and
// closes it again (the open's descriptor is then dropped: the caller is
// gone). At once, not at the next tick: a blocked open left behind its
// dead caller is a peer for the next process to open the FIFO, which
// would take it for a writer or reader that never comes (a cat reading
// EOF; TestFSCreateGateSemantics's fifo row hung once in 16 runs so). done
// answers the call.
func (c *createGate) openAside(a asideOpen, valid func() bool, done func(int, unix.Errno)) {
	go func() {
		c.aside <- struct{}{}
		defer func() { <-c.aside }()
		defer unix.Close(a.obj)
		path := "/proc/self/fd/" + strconv.Itoa(a.obj)
		var fd int
		var errno unix.Errno
		// gone: the caller is gone (release); opening: the thread's
		// open is made (or about to be). Each is set before the other
		// is read, so either the open is not made or the release sees
		// it: a release is made only for an open the prepared thread
		// makes, never before it (the release is the init's own open,
		// which the command's checks would not let through: a helper's
		// review).
		var gone, opening atomic.Bool
		finished := make(chan struct{})
		c.onFreshThread(func(ready bool) {
			defer close(finished)
			if !ready {
				fd, errno = -1, unix.EPERM
				return
			}
			if opening.Store(true); gone.Load() {
				fd, errno = -1, unix.EINTR // not answered: the caller is gone
				return
			}
			var err error
			// The object is resolved: its /proc/self/fd link is
			// followed whatever the caller's O_NOFOLLOW (ELOOP else).
			fd, err = unix.Open(path, a.flags&^unix.O_NOFOLLOW, 0)
			errno = errnoOr(err)
		})
		exited := make(chan struct{})
		if a.pidfd >= 0 {
			// Waited for in the network poller (no thread blocks); the
			// file is closed once the open is answered, which ends it.
			pf := os.NewFile(uintptr(a.pidfd), "pidfd")
			defer pf.Close()
			if rc, err := pf.SyscallConn(); err == nil {
				go func() {
					if rc.Read(func(fd uintptr) bool {
						p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
						n, err := unix.Poll(p, 0)
						return err == nil && n > 0 // EINTR: wait again
					}) == nil {
						close(exited)
					}
				}()
			}
		}
		tick := time.NewTicker(asideTick)
		defer tick.Stop()
		// Again at each tick while the open is not answered: a release
		// can come before the thread's open blocks (a caller killed
		// at once), and would then release nothing.
		release := func() {
			if gone.Store(true); !opening.Load() {
				return
			}
			if rw, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0); err == nil {
				unix.Close(rw)
			}
		}
		for {
			select {
			case <-finished:
				done(fd, errno)
				return
			case <-exited:
				release()
				exited = nil
			case <-tick.C:
				if !valid() {
					release()
				}
			}
		}
	}()
}

// asideTick is how often a blocked aside open asks whether its caller is
// still there.
const asideTick = 200 * time.Millisecond

// onFreshThread runs fn on a new thread made the command's (ready: the
// preparation held), never the main thread; the thread ends with fn (it
// stays locked, so Go does not reuse it).
func (c *createGate) onFreshThread(fn func(ready bool)) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			c.onFreshThread(fn)
			runtime.UnlockOSThread()
			return
		}
		fn(c.prepareThread() == nil)
	}()
}

// caller is the thread that made the call, as the gate needs it.
type caller struct {
	req       *seccompNotif
	pidfd     int
	procDir   string // /proc/TID in the sandbox's /proc
	tgid, tid string // as the sandbox's /proc numbers them
	umask     int
	root      int // the sandbox's root (the gate's: not closed here)
}

func (cl *caller) close() {
	if cl.pidfd >= 0 {
		unix.Close(cl.pidfd)
	}
}

// answerCreate takes one notified call: what needs the init's own view
// of the caller (its /proc entry, its memory, its descriptors) is read
// here, on the gate's goroutine (quick, never blocking on the caller);
// the decision, the call and the answer are a worker's.
func (g *unixGate) answerCreate(req seccompNotif) {
	c := g.create
	job, errno := c.prepare(g.listener, &req)
	if job == nil {
		g.respond(&req, -1, errno, 0)
		return
	}
	c.submit(func(ready bool) {
		defer job.close()
		if !ready {
			g.respond(&req, -1, c.fail(&req, job.o.kind, job.p1+job.p2, fmt.Errorf("no worker thread")), 0)
			return
		}
		w := &walker{c: c, cl: job.cl}
		if c.sharedFS.Load() {
			w.umask = uint32(job.cl.umask)
		} else {
			unix.Umask(job.cl.umask)
		}
		fd, errno, refusal := -1, unix.Errno(0), (*CreateRefusal)(nil)
		if job.o.kind == "bind" {
			c.nameMu.RLock() // a name made (perform's)
			errno = errnoOr(w.bind(job.sock, job.addr, job.d1, job.p1))
			c.nameMu.RUnlock()
			refusal = w.refusal
		} else {
			fd, errno, refusal = w.perform(job.o, job.d1, job.p1, job.d2, job.p2, job.target)
		}
		if w.aside != nil {
			id := req.ID
			// The caller's thread, whose end releases the open at once
			// (a pidfd needs no permission; -1: the ticks alone).
			w.aside.pidfd = -1
			if pfd, err := threadPidfd(int(req.Pid), unix.PIDFD_NONBLOCK); err == nil {
				w.aside.pidfd = pfd
			}
			c.openAside(*w.aside, func() bool {
				_, e := notifIoctl(g.listener, ioctlNotifIDValid, unsafe.Pointer(&id))
				return e == 0
			}, func(fd int, errno unix.Errno) { g.respond(&req, fd, errno, job.o.flags) })
			return
		}
		if refusal != nil || w.openRefusal != nil {
			b, _ := os.ReadFile(job.cl.procDir + "/comm")
			comm := strings.TrimSpace(string(b))
			if refusal != nil {
				refusal.Pid, refusal.Comm = atoiOr(job.cl.tgid), comm
				c.report(*refusal)
			}
			if r := w.openRefusal; r != nil {
				r.Pid, r.Comm = atoiOr(job.cl.tgid), comm
				c.reportOpen(*r)
			}
		}
		g.respond(&req, fd, errno, job.o.flags)
	})
}

// respond answers req: with fd installed in the caller (an open's result;
// O_CLOEXEC as flags ask), or with errno (0: success).
//
// The descriptor is added (SECCOMP_IOCTL_NOTIF_ADDFD) and the answer sent
// with its number in two steps, not with SECCOMP_ADDFD_FLAG_SEND: an
// ADDFD|SEND marks the call answered before the caller has taken the
// descriptor, and when a signal interrupts the gate's wait for that (any
// signal the init's thread takes: a SIGCHLD of an orphan, the runtime's
// preemption) the request is withdrawn, the restarted ioctl fails
// (EINPROGRESS), and the caller's open returns 0, a descriptor it did not
// open, with no error: a write to it fails with EBADF (the one go build
// seen failing so, "write go_asm.h: bad file descriptor", fits this; it
// was not reproduced). A plain ADDFD interrupted before the caller took
// the descriptor is withdrawn whole and made again on restart. The cost
// of the two steps: the descriptor is in the caller's table just before
// its call returns (a caller killed between them takes it along).
func (g *unixGate) respond(req *seccompNotif, fd int, errno unix.Errno, flags int) {
	resp := seccompNotifResp{ID: req.ID, Error: -int32(errno)}
	if fd >= 0 {
		add := seccompNotifAddfd{ID: req.ID, Srcfd: uint32(fd)}
		if flags&unix.O_CLOEXEC != 0 {
			add.NewfdFlags = unix.O_CLOEXEC
		}
		r, e := notifIoctl(g.listener, ioctlNotifAddfd, unsafe.Pointer(&add))
		unix.Close(fd)
		switch {
		case e == unix.ENOENT:
			return // the caller is gone
		case e != 0:
			resp.Error = -int32(e)
		default:
			resp.Val, resp.Error = int64(r), 0
		}
	}
	notifIoctl(g.listener, ioctlNotifSend, unsafe.Pointer(&resp))
}

// op is one notified call in the *at form.
type op struct {
	kind       string // open, mkdir, mknod, rename, link, symlink
	dir1, dir2 int    // directory descriptors (in the caller), or atFDCWD
	path1      uintptr
	path2      uintptr
	target     uintptr // symlink's target
	flags      int     // open's flags, renameat2's, linkat's
	mode       uint32
	dev        uint64
	// bind: the caller's socket (path1 is the address, addrLen its
	// length).
	sock    int
	addrLen int
}

func fdArg(a uint64) int { return int(int32(uint32(a))) }

// decode puts the call in the *at form.
func (c *createGate) decode(req *seccompNotif) (op, bool) {
	a, nr := req.Args, uint32(req.Nr)
	ar := c.arch
	switch {
	case ar.Open != 0 && nr == ar.Open:
		return op{kind: "open", dir1: atFDCWD, path1: uintptr(a[0]), flags: int(int32(a[1])), mode: uint32(a[2])}, true
	case nr == ar.Openat:
		return op{kind: "open", dir1: fdArg(a[0]), path1: uintptr(a[1]), flags: int(int32(a[2])), mode: uint32(a[3])}, true
	case ar.Creat != 0 && nr == ar.Creat:
		return op{kind: "open", dir1: atFDCWD, path1: uintptr(a[0]), flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, mode: uint32(a[1])}, true
	case ar.Mkdir != 0 && nr == ar.Mkdir:
		return op{kind: "mkdir", dir1: atFDCWD, path1: uintptr(a[0]), mode: uint32(a[1])}, true
	case nr == ar.Mkdirat:
		return op{kind: "mkdir", dir1: fdArg(a[0]), path1: uintptr(a[1]), mode: uint32(a[2])}, true
	case ar.Mknod != 0 && nr == ar.Mknod:
		return op{kind: "mknod", dir1: atFDCWD, path1: uintptr(a[0]), mode: uint32(a[1]), dev: a[2]}, true
	case nr == ar.Mknodat:
		return op{kind: "mknod", dir1: fdArg(a[0]), path1: uintptr(a[1]), mode: uint32(a[2]), dev: a[3]}, true
	case ar.Rename != 0 && nr == ar.Rename:
		return op{kind: "rename", dir1: atFDCWD, path1: uintptr(a[0]), dir2: atFDCWD, path2: uintptr(a[1])}, true
	case ar.Renameat != 0 && nr == ar.Renameat:
		return op{kind: "rename", dir1: fdArg(a[0]), path1: uintptr(a[1]), dir2: fdArg(a[2]), path2: uintptr(a[3])}, true
	case nr == ar.Renameat2:
		return op{kind: "rename", dir1: fdArg(a[0]), path1: uintptr(a[1]), dir2: fdArg(a[2]), path2: uintptr(a[3]), flags: int(uint32(a[4]))}, true
	case ar.Link != 0 && nr == ar.Link:
		return op{kind: "link", dir1: atFDCWD, path1: uintptr(a[0]), dir2: atFDCWD, path2: uintptr(a[1])}, true
	case nr == ar.Linkat:
		return op{kind: "link", dir1: fdArg(a[0]), path1: uintptr(a[1]), dir2: fdArg(a[2]), path2: uintptr(a[3]), flags: int(uint32(a[4]))}, true
	case ar.Symlink != 0 && nr == ar.Symlink:
		return op{kind: "symlink", target: uintptr(a[0]), dir2: atFDCWD, path2: uintptr(a[1])}, true
	case nr == ar.Symlinkat:
		return op{kind: "symlink", target: uintptr(a[0]), dir2: fdArg(a[1]), path2: uintptr(a[2])}, true
	case ar.Bind != 0 && nr == ar.Bind:
		return op{kind: "bind", sock: fdArg(a[0]), path1: uintptr(a[1]), addrLen: int(int32(uint32(a[2])))}, true
	}
	return op{}, false
}

// createJob is one call, read and ready for a worker.
type createJob struct {
	o              op
	cl             *caller
	p1, p2, target string
	d1, d2         int    // descriptors the walks start from (-1: the root)
	sock           int    // bind: the init's copy of the socket, or -1
	addr           []byte // bind: the address, as read
}

func (j *createJob) close() {
	for _, fd := range []int{j.d1, j.d2, j.sock} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	j.cl.close()
}

// prepare reads what one call needs of its caller: the paths (once), the
// descriptors the walks start from (copied now: the caller's table may
// change once it runs again). A nil job: answer with the errno.
func (c *createGate) prepare(listener int, req *seccompNotif) (*createJob, unix.Errno) {
	o, ok := c.decode(req)
	if !ok {
		return nil, unix.ENOSYS
	}
	cl, err := c.caller(req)
	if err != nil {
		return nil, c.fail(req, o.kind, "", err)
	}
	j := &createJob{o: o, cl: cl, d1: -1, d2: -1, sock: -1}
	if o.kind == "bind" {
		return c.prepareBind(listener, req, j)
	}
	for _, s := range []struct {
		addr uintptr
		dst  *string
		want bool
	}{{o.path1, &j.p1, o.kind != "symlink"}, {o.path2, &j.p2, o.kind == "rename" || o.kind == "link" || o.kind == "symlink"}, {o.target, &j.target, o.kind == "symlink"}} {
		if !s.want {
			continue
		}
		v, errno := cl.readString(s.addr)
		if errno == unix.ENOTRECOVERABLE {
			j.close()
			return nil, c.fail(req, o.kind, "", fmt.Errorf("cannot read the caller's memory"))
		}
		if errno != 0 {
			j.close()
			return nil, errno
		}
		*s.dst = v
	}
	if o.kind != "symlink" {
		if j.d1, err = cl.dirFD(o.dir1, j.p1, o.kind == "link" && o.flags&unix.AT_EMPTY_PATH != 0); err != nil {
			j.close()
			return nil, errnoOf(err, c, req, o.kind, j.p1)
		}
	}
	if o.kind == "rename" || o.kind == "link" || o.kind == "symlink" {
		if j.d2, err = cl.dirFD(o.dir2, j.p2, false); err != nil {
			j.close()
			return nil, errnoOf(err, c, req, o.kind, j.p2)
		}
	}
	if cl.root, err = c.rootFD(); err != nil {
		j.close()
		return nil, c.fail(req, o.kind, j.p1+j.p2, err)
	}
	// Still the caller: its pid was not reused while it was read.
	id := req.ID
	if _, e := notifIoctl(listener, ioctlNotifIDValid, unsafe.Pointer(&id)); e != 0 {
		j.close()
		return nil, unix.EPERM
	}
	return j, 0
}

// prepareBind reads a bind(sock, addr, len): a copy of the socket
// (pidfd_getfd) and the address, once. A Unix socket's path is the job's
// p1 (walked from the caller's cwd or root); any other address is bound
// as it is, on the copy.
func (c *createGate) prepareBind(listener int, req *seccompNotif, j *createJob) (*createJob, unix.Errno) {
	fail := func(errno unix.Errno) (*createJob, unix.Errno) {
		j.close()
		return nil, errno
	}
	cl, o := j.cl, &j.o
	if o.addrLen < 0 || o.addrLen > int(unsafe.Sizeof(unix.RawSockaddrAny{})) {
		return fail(unix.EINVAL)
	}
	if err := cl.openPidfd(); err != nil {
		return fail(c.fail(req, o.kind, "", err))
	}
	var err error
	sock := -1
	if rerr := asCommandReal(func() { sock, err = unix.PidfdGetfd(cl.pidfd, o.sock, 0) }); rerr != nil {
		return fail(c.fail(req, o.kind, "", rerr))
	}
	if err != nil {
		return fail(unix.EBADF)
	}
	j.sock = sock
	domain, err := unix.GetsockoptInt(j.sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fail(unix.ENOTSOCK)
	}
	j.addr = make([]byte, o.addrLen)
	if o.addrLen > 0 {
		var n int
		if rerr := asCommandReal(func() {
			n, err = unix.ProcessVMReadv(int(req.Pid), []unix.Iovec{{Base: &j.addr[0], Len: uint64(o.addrLen)}},
				[]unix.RemoteIovec{{Base: o.path1, Len: o.addrLen}}, 0)
		}); rerr != nil {
			return fail(c.fail(req, o.kind, "", fmt.Errorf("cannot read the caller's memory")))
		}
		if err != nil || n != o.addrLen {
			return fail(unix.EFAULT)
		}
	}
	const sunPath = 2 // offsetof(struct sockaddr_un, sun_path)
	if domain == unix.AF_UNIX && o.addrLen > sunPath && j.addr[sunPath] != 0 {
		// A path (not the abstract namespace, not an autobind).
		if binary.NativeEndian.Uint16(j.addr) != unix.AF_UNIX || o.addrLen > int(unsafe.Sizeof(unix.RawSockaddrUnix{})) {
			return fail(unix.EINVAL)
		}
		p := j.addr[sunPath:]
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		j.p1 = string(p)
		if j.d1, err = cl.dirFD(atFDCWD, j.p1, false); err != nil {
			return fail(errnoOf(err, c, req, o.kind, j.p1))
		}
	}
	if cl.root, err = c.rootFD(); err != nil {
		return fail(c.fail(req, o.kind, j.p1, err))
	}
	id := req.ID
	if _, e := notifIoctl(listener, ioctlNotifIDValid, unsafe.Pointer(&id)); e != 0 {
		return fail(unix.EPERM)
	}
	return j, 0
}

// openPidfd opens the caller's pidfd once.
func (cl *caller) openPidfd() error {
	if cl.pidfd >= 0 {
		return nil
	}
	var err error
	if cl.pidfd, err = threadPidfd(int(cl.req.Pid), 0); err != nil {
		cl.pidfd = -1
		return fmt.Errorf("pidfd of %d: %w", cl.req.Pid, err)
	}
	return nil
}

func atoiOr(s string) int { n, _ := strconv.Atoi(s); return n }

// errnoOf maps a descriptor copy's failure: a bad descriptor is the
// caller's (EBADF), anything else the gate's.
func errnoOf(err error, c *createGate, req *seccompNotif, kind, path string) unix.Errno {
	if errno, ok := err.(unix.Errno); ok {
		return errno
	}
	return c.fail(req, kind, path, err)
}

// fail reports a failure of the gate and returns EPERM.
func (c *createGate) fail(req *seccompNotif, kind, path string, err error) unix.Errno {
	c.report(CreateRefusal{Op: kind, Path: path, Pid: int(req.Pid), Rule: "create gate", Reason: oneLine(err.Error())})
	return unix.EPERM
}

// caller reads what the gate needs of req's thread: its /proc entry's
// ids and umask (on the gate's goroutine: c.status is its buffer).
func (c *createGate) caller(req *seccompNotif) (*caller, error) {
	cl := &caller{req: req, pidfd: -1, root: -1}
	var status []byte
	var err error
	if rerr := asCommandReal(func() {
		if cl.procDir, err = procDirOf(c.proc, int(req.Pid)); err != nil {
			return
		}
		status, err = readSmallInto(cl.procDir+"/status", c.status[:])
	}); rerr != nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	f := parseStatus(status)
	um, err1 := strconv.ParseInt(firstField(f.umask), 8, 32)
	if err1 != nil || len(f.uid) != 4 || len(f.gid) != 4 || firstField(f.tgid) == "" || firstField(f.pid) == "" {
		return nil, fmt.Errorf("%s/status: no Umask, Uid, Gid, Tgid or Pid", cl.procDir)
	}
	if f.uid[3] != strconv.Itoa(c.uid) || f.gid[3] != strconv.Itoa(c.gid) {
		return nil, fmt.Errorf("%s's fs ids are %s:%s, not the command's %d:%d", cl.procDir, f.uid[3], f.gid[3], c.uid, c.gid)
	}
	cl.umask, cl.tgid, cl.tid = int(um), f.tgid[0], f.pid[0]
	return cl, nil
}

// callerStatus holds the fields of a /proc/PID/status that the gate reads,
// each split on white space (nil: no such line; a later line of the same
// key wins, as it did in a map of every line).
type callerStatus struct {
	umask, uid, gid, tgid, pid []string
}

func firstField(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// parseStatus reads the fields of callerStatus from a /proc/PID/status.
func parseStatus(b []byte) callerStatus {
	var f callerStatus
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *[]string
		switch string(k) {
		case "Umask":
			dst = &f.umask
		case "Uid":
			dst = &f.uid
		case "Gid":
			dst = &f.gid
		case "Tgid":
			dst = &f.tgid
		case "Pid":
			dst = &f.pid
		default:
			continue
		}
		*dst = strings.Fields(string(v))
	}
	return f
}

// readString reads a NUL-terminated path from the caller's memory, once
// (page by page: a string may end just before an unmapped page).
func (cl *caller) readString(addr uintptr) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	var out []byte
	for len(out) < pathMax {
		n := pathMax - len(out)
		if room := 4096 - int(addr%4096); room < n {
			n = room
		}
		buf := make([]byte, n)
		var got int
		var err error
		if rerr := asCommandReal(func() {
			got, err = unix.ProcessVMReadv(int(cl.req.Pid), []unix.Iovec{{Base: &buf[0], Len: uint64(n)}},
				[]unix.RemoteIovec{{Base: addr, Len: n}}, 0)
		}); rerr != nil || (err != nil && err != unix.EFAULT) {
			// Not the caller's address: the gate could not read it.
			return "", unix.ENOTRECOVERABLE
		} else if err != nil || got <= 0 {
			return "", unix.EFAULT
		}
		if i := strings.IndexByte(string(buf[:got]), 0); i >= 0 {
			return string(append(out, buf[:i]...)), 0
		}
		out = append(out, buf[:got]...)
		addr += uintptr(got)
	}
	return "", unix.ENAMETOOLONG
}

// dirFD returns an O_PATH descriptor of where path starts: the caller's
// cwd (AT_FDCWD) or a copy of its descriptor dir; -1 for an absolute path
// (the walk starts at the caller's root). empty: AT_EMPTY_PATH with an
// empty path (dir is the object itself).
func (cl *caller) dirFD(dir int, path string, empty bool) (int, error) {
	if filepath.IsAbs(path) {
		return -1, nil
	}
	if dir == atFDCWD {
		var fd int
		var err error
		if rerr := asCommandReal(func() {
			fd, err = unix.Open(cl.procDir+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}); rerr != nil {
			return -1, rerr
		}
		if err != nil {
			return -1, fmt.Errorf("cwd: %w", err)
		}
		return fd, nil
	}
	if path == "" && !empty {
		return -1, unix.ENOENT
	}
	if err := cl.openPidfd(); err != nil {
		return -1, err
	}
	var fd int
	var err error
	if rerr := asCommandReal(func() { fd, err = unix.PidfdGetfd(cl.pidfd, dir, 0) }); rerr != nil {
		return -1, rerr
	}
	if err != nil {
		return -1, unix.EBADF
	}
	return fd, nil
}

// rootFD returns the sandbox's root, opened once (after the mount layer:
// at the first call). The command cannot change its root (chroot needs a
// capability it does not have), so every caller's root is the init's.
func (c *createGate) rootFD() (int, error) {
	c.rootOnce.Do(func() {
		c.root, c.rootErr = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if c.rootErr != nil {
		return -1, fmt.Errorf("root: %w", c.rootErr)
	}
	return c.root, nil
}

// readSmallInto reads a small /proc file with one read into buf.
func readSmallInto(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// walker resolves the caller's paths on a worker thread.
type walker struct {
	c     *createGate
	cl    *caller
	links int
	umask uint32     // applied to modes here (the workers share the init's umask, 0); 0 otherwise
	aside *asideOpen // an open to make outside the pool (a FIFO), set by open
	// refusal is bind's (bind returns an error, as the kernel's).
	refusal *CreateRefusal
	// openRefusal: the open route refused the file opened
	// (decideOpened).
	openRefusal *OpenRefusal
}

// fifoAside hands the open of the FIFO obj (O_PATH, now the walker's) to
// openAside, unless it cannot block (O_NONBLOCK, O_RDWR).
func (w *walker) fifoAside(obj int, flags int) bool {
	var st unix.Stat_t
	if flags&unix.O_NONBLOCK != 0 || flags&unix.O_ACCMODE == unix.O_RDWR || unix.Fstat(obj, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return false
	}
	w.aside = &asideOpen{obj: obj, flags: flags, pidfd: -1}
	return true
}

// resolved is where a path leads: the directory holding its last
// component and that component, or (obj >= 0) the object itself (a
// directory reached by following, or a magic link's target).
type resolved struct {
	parent int
	name   string
	obj    int
	// seen: what the walk's last step saw at name (a followed last
	// component that was not walked into): statExists with st, or
	// statMissing; statUnknown otherwise.
	seen int
	st   unix.Stat_t
}

const (
	statUnknown = iota
	statExists
	statMissing
)

func (r resolved) close() {
	if r.parent >= 0 {
		unix.Close(r.parent)
	}
	if r.obj >= 0 {
		unix.Close(r.obj)
	}
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// walk resolves path from start (a descriptor of the caller's, or -1 for
// the caller's root) as the kernel would for the caller; follow: a final
// symlink is followed.
func (w *walker) walk(start int, path string, follow bool) (resolved, unix.Errno) {
	if path == "" {
		return resolved{}, unix.ENOENT
	}
	from := start
	if filepath.IsAbs(path) || start < 0 {
		from = w.cl.root
	} else if errno := w.notInit(start); errno != 0 {
		// The caller's cwd or directory descriptor is one of the init's
		// /proc/PID directories (chdir and an O_PATH open are not
		// gated): refused as a walk into one is, or a name in it
		// ("comm", "mem") would be opened by a thread of the init's,
		// which the kernel lets through (a helper's review).
		return resolved{}, errno
	}
	queue := splitPath(path)
	cur := -1
	if len(queue) > 1 {
		if cur = w.dirsAtOnce(from, queue[:len(queue)-1]); cur >= 0 {
			queue = queue[len(queue)-1:]
		}
	}
	if cur < 0 {
		var err error
		if cur, err = dupCloexec(from); err != nil {
			return resolved{}, unix.EMFILE
		}
	}
	if len(queue) == 0 {
		// "/": the root itself.
		return resolved{parent: -1, obj: cur}, 0
	}
	for len(queue) > 0 {
		comp := queue[0]
		queue = queue[1:]
		last := len(queue) == 0
		if last && (!follow || comp == "." || comp == "..") {
			return resolved{parent: cur, name: comp, obj: -1}, 0
		}
		if comp == "." {
			continue
		}
		next := -1
		var st unix.Stat_t
		var errno unix.Errno
		if last {
			// The last component is stat'ed, and opened only when it is
			// a directory (walked into): a file or a missing name needs
			// no descriptor here, and the stat is the one open uses.
			if err := unix.Fstatat(cur, comp, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				errno = errnoOr(err)
			} else if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				next, st, errno = w.step(cur, comp)
			}
		} else {
			next, st, errno = w.step(cur, comp)
		}
		if errno != 0 {
			if errno == unix.ENOENT && last {
				return resolved{parent: cur, name: comp, obj: -1, seen: statMissing}, 0
			}
			unix.Close(cur)
			return resolved{}, errno
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(cur)
			cur = next
			if kind, self := w.procKindOf(cur, &st); kind == procPID && self {
				// One of the init's own /proc directories.
				unix.Close(cur)
				return resolved{}, unix.EACCES
			}
		case unix.S_IFLNK:
			if next >= 0 {
				unix.Close(next)
			}
			if w.links++; w.links > maxSymlinks {
				unix.Close(cur)
				return resolved{}, unix.ELOOP
			}
			kind, self := w.procKind(cur)
			if kind == procRoot && (comp == "self" || comp == "thread-self") {
				// The caller's, not the init's.
				sub := []string{w.cl.tgid}
				if comp == "thread-self" {
					sub = append(sub, "task", w.cl.tid)
				}
				queue = append(sub, queue...)
				continue
			}
			if kind == procPID {
				if self {
					unix.Close(cur)
					return resolved{}, unix.EACCES
				}
				obj, errno := w.magic(cur, comp)
				unix.Close(cur)
				if errno != 0 {
					return resolved{}, errno
				}
				if last {
					return resolved{parent: -1, obj: obj}, 0
				}
				cur = obj
				continue
			}
			target, errno := readlinkAt(cur, comp)
			if errno != 0 {
				unix.Close(cur)
				return resolved{}, errno
			}
			if target == "" {
				unix.Close(cur)
				return resolved{}, unix.ENOENT
			}
			if filepath.IsAbs(target) {
				unix.Close(cur)
				var err error
				if cur, err = dupCloexec(w.cl.root); err != nil {
					return resolved{}, unix.EMFILE
				}
			}
			queue = append(splitPath(target), queue...)
			if len(queue) == 0 {
				// A link to "/".
				return resolved{parent: -1, obj: cur}, 0
			}
		default:
			if next >= 0 {
				unix.Close(next)
			}
			if last {
				return resolved{parent: cur, name: comp, obj: -1, seen: statExists, st: st}, 0
			}
			unix.Close(cur)
			return resolved{}, unix.ENOTDIR
		}
	}
	// The last component was a directory, followed.
	return resolved{parent: -1, obj: cur}, 0
}

// dirsAtOnce opens the directories dirs (a path's components but its
// last) from the directory from in one call, where that resolves them as
// walk would one by one: openat2 with RESOLVE_NO_SYMLINKS (magic links
// included) fails on any symlink, which walk resolves itself (a target
// from the caller's root, /proc/self as the caller); with no ".." every
// directory passed lies below from, so a directory that is not in a
// procfs was reached through none of a procfs's (a /proc/PID of the
// init's, which walk refuses) unless a mount sits on a directory of a
// process's in a procfs, which neither the sandbox nor the command makes.
// It returns -1 (walk goes one by one, and says why it fails) for
// anything else: a symlink, a "..", a procfs directory, any error; and
// for good once openat2 is missing (ENOSYS: before Linux 5.6, or a
// seccomp profile's answer). Not for EPERM, which a FUSE server or an
// overlay's redirect gives for one path (a helper's review): a
// container profile that answers EPERM costs a failed call each time.
// git's index.lock is four components deep: one call with a stat for
// what took four of each (open, stat, statfs, close) and a dup.
func (w *walker) dirsAtOnce(from int, dirs []string) int {
	if w.c.noOpenat2.Load() {
		return -1
	}
	for _, d := range dirs {
		if d == ".." {
			return -1
		}
	}
	fd, err := unix.Openat2(from, strings.Join(dirs, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		if err == unix.ENOSYS {
			w.c.noOpenat2.Store(true)
		}
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return -1
	}
	if kind, _ := w.procKindOf(fd, &st); kind != procNone {
		unix.Close(fd)
		return -1
	}
	return fd
}

// dupCloexec duplicates fd, close-on-exec (one call: F_DUPFD_CLOEXEC).
func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// step opens comp in dir without following it (O_PATH) and stats it.
func (w *walker) step(dir int, comp string) (int, unix.Stat_t, unix.Errno) {
	var st unix.Stat_t
	fd, err := unix.Openat(dir, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, st, err.(unix.Errno)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err.(unix.Errno)
	}
	return fd, st, 0
}

const (
	procNone = iota
	procRoot // the root of a procfs mount
	procPID  // inside a procfs mount, below its root
)

// procKind says whether dir is in a procfs mount, and for one below a
// /proc/PID, whether PID is one of the init's own threads (self).
func (w *walker) procKind(dir int) (kind int, self bool) {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil {
		return procPID, true // cannot be placed: fail closed
	}
	return w.procKindOf(dir, &st)
}

// procKindOf is procKind for dir, whose stat is st: a procfs mount is
// told by its device (every mount of the sandbox's procfs, /proc and the
// read-only binds below it, is one superblock).
func (w *walker) procKindOf(dir int, st *unix.Stat_t) (kind int, self bool) {
	if uint64(st.Dev) != w.c.procDevice() {
		if unix.Major(uint64(st.Dev)) != 0 {
			// A block device's: a procfs has an anonymous device
			// number (major 0), as every filesystem with no device.
			return procNone, false
		}
		var sfs unix.Statfs_t
		if unix.Fstatfs(dir, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
			return procNone, false
		}
		// Another procfs than the sandbox's /proc: placed like it.
	}
	if st.Ino == 1 {
		return procRoot, false
	}
	return procPID, w.initProcDir(dir)
}

// procDevice is the device of the sandbox's /proc, read once (after the
// init mounted it: at the first call); 0 when /proc is not a procfs, and
// then every directory is asked its filesystem type.
func (c *createGate) procDevice() uint64 {
	c.procOnce.Do(func() {
		var sfs unix.Statfs_t
		var st unix.Stat_t
		if unix.Statfs("/proc", &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC && unix.Stat("/proc", &st) == nil {
			c.procDev = uint64(st.Dev)
		}
	})
	return c.procDev
}

// initProcDir says whether dir lies below /proc/PID where PID is a thread
// of the init, or cannot be placed (fail closed).
func (w *walker) initProcDir(dir int) bool {
	pid, ok := procDirPID(dir)
	switch {
	case !ok:
		return true // cannot be placed: fail closed
	case pid == "":
		return false // below /proc but in no process's directory (/proc/sys, ...)
	}
	_, err := os.Lstat("/proc/self/task/" + pid)
	return err == nil
}

// procDirPID is the process number of dir, a directory of the sandbox's
// /proc (/proc/PID or below it): ok is false when dir cannot be named or
// is not below /proc, pid "" for one below /proc in no process's
// directory (/proc/sys).
func procDirPID(dir int) (pid string, ok bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(dir))
	if err != nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	pid, _, _ = strings.Cut(rest, "/")
	if _, err := strconv.Atoi(pid); err != nil {
		return "", true
	}
	return pid, true
}

// notInit refuses a procfs directory of the init's own (its memory,
// descriptors and the like are the init's, and the workers are in its
// thread group, which the kernel lets through).
func (w *walker) notInit(dir int) unix.Errno {
	if kind, self := w.procKind(dir); kind == procPID && self {
		return unix.EACCES
	}
	return 0
}

// magic follows the magic link comp in the /proc/PID directory dir (a
// descriptor, a cwd, a root): the init opens it (a worker's Landlock
// domain is not the command's, and the kernel checks ptrace access
// against it).
func (w *walker) magic(dir int, comp string) (int, unix.Errno) {
	var fd int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if rerr := asCommandReal(func() { fd, err = unix.Openat(dir, comp, unix.O_PATH|unix.O_CLOEXEC, 0) }); rerr != nil {
			err = unix.EPERM
		}
	}()
	<-done
	if err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return -1, errno
		}
		return -1, unix.EPERM
	}
	if errno := w.notInit(fd); errno != 0 {
		unix.Close(fd)
		return -1, errno
	}
	return fd, 0
}

func readlinkAt(dir int, name string) (string, unix.Errno) {
	buf := make([]byte, pathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err.(unix.Errno)
	}
	if n >= len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), 0
}

// pathOf is where a descriptor is, in the sandbox's mount namespace.
func pathOf(fd int) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
}

// decideAt decides creating name in dir; nil when allowed.
func (w *walker) decideAt(kind string, dir int, name string) (*CreateRefusal, unix.Errno) {
	if name == "." || name == ".." {
		return nil, 0 // the kernel refuses creating these (EEXIST, ...)
	}
	d, err := pathOf(dir)
	if err != nil {
		return &CreateRefusal{Op: kind, Path: name, Rule: "create gate", Reason: oneLine(err.Error())}, unix.EPERM
	}
	return w.decidePath(kind, filepath.Join(d, name))
}

func (w *walker) decidePath(kind, p string) (*CreateRefusal, unix.Errno) {
	return w.decidePathAs(kind, kind, p)
}

// decidePathAs decides p by op (policy's DecidePlace), reported as kind.
func (w *walker) decidePathAs(kind, op, p string) (*CreateRefusal, unix.Errno) {
	if refused, rule, reason := w.c.decide(op, p); refused {
		return &CreateRefusal{Op: kind, Path: p, Rule: rule, Reason: reason}, unix.EACCES
	}
	if op == "move-source" || op == "link-source" {
		return w.decideOpenable(kind, p, p) // the file as it is named now
	}
	// A file made where the open gate refuses that name, whatever the
	// file (a FIFO or a symlink the command holds there would carry what
	// the host writes to it); a link's or a rename's new name is decided
	// for the file it names (decideNamed), a directory's never (it
	// carries nothing: a file below it is decided by its own name).
	switch op {
	case "open", "mknod", "symlink", "replace":
		if refused, rule, reason := w.c.openRefused(p, nil); refused {
			return &CreateRefusal{Op: kind, Path: p, Rule: rule, Reason: oneLine("the open gate refuses that name: " + reason)}, unix.EACCES
		}
	}
	return nil, 0
}

// decideOpenable refuses to give the regular file at file (not followed)
// the name as when the open gate's decider refuses opening it there
// (openRefused, by its identity too): a rename's or a link's source (as
// itself) and destination, and each file below a moved directory. The
// create gate's own decision sees the patterns as they resolve now; the
// gate's, as they resolved at start and as written (a pattern's
// directory the command replaced since), so that no file the host writes
// into is given a name the gate would let it open, nor a file the command
// holds open a name the host then writes to (bypass reviews read keys so
// both ways). A missing file is ENOENT (no refusal), the call is not
// made: decided missing, it is not moved once the host has made it.
func (w *walker) decideOpenable(kind, file, as string) (*CreateRefusal, unix.Errno) {
	if w.c.openDecide == nil {
		return nil, 0
	}
	var st unix.Stat_t
	if err := unix.Lstat(file, &st); err == unix.ENOENT {
		return nil, unix.ENOENT
	} else if err != nil {
		return &CreateRefusal{Op: kind, Path: as, Rule: "create gate", Reason: oneLine("cannot identify " + file + ": " + err.Error())}, unix.EPERM
	}
	return w.decideNamed(kind, as, &st)
}

// decideNamed is decideOpenable for the file st: a regular file by its
// identity and the name, any other file but a directory by the name.
func (w *walker) decideNamed(kind, as string, st *unix.Stat_t) (*CreateRefusal, unix.Errno) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return nil, 0
	case unix.S_IFREG:
	default:
		st = nil
	}
	if refused, rule, reason := w.c.openRefused(as, st); refused {
		return &CreateRefusal{Op: kind, Path: as, Rule: rule, Reason: oneLine("the open gate refuses it there, so it is not given that name: " + reason)}, unix.EACCES
	}
	return nil, 0
}

// openRefused is the open gate's decision of the regular file st opened
// as path, or of the name path alone (st nil: a device and inode number
// no file has): refused only at or below the gate's roots (OpenRoots),
// where the gate decides.
func (c *createGate) openRefused(path string, st *unix.Stat_t) (refused bool, rule, reason string) {
	if c.openDecide == nil || !c.inOpenRoots(path) {
		return false, "", ""
	}
	if st == nil {
		return c.openDecide(path, 0, 0, false)
	}
	return c.openDecide(path, st.Dev, st.Ino, c.hostDevs[st.Dev])
}

// decideExisting decides, under root's fanotify open gate, the existing
// regular file name in dir (seen as st) that this worker is about to open
// for the caller: EPERM when the open gate's decider refuses it
// (w.openRefusal says why), as the fanotify gate would refuse the
// worker's open, but with the refusal line naming the caller, not the
// init. Under the open route the file opened is decided after the open
// (decideOpened). Only a file on one of the host's devices, whose
// identity is the one the fanotify gate decides (a file of the home
// overlay's could only be compared by its inode number here, and refused
// where that gate allows it), and one that can be named: anything else is
// left to the fanotify gate, which decides the open all the same.
func (w *walker) decideExisting(dir int, name string, st *unix.Stat_t) unix.Errno {
	if w.c.openDecide == nil || w.c.openRoute || !w.c.hostDevs[uint64(st.Dev)] {
		return 0
	}
	p := w.pathIn(dir, name)
	if !strings.HasPrefix(p, "/") {
		return 0
	}
	if refused, rule, reason := w.c.openRefused(p, st); refused {
		w.openRefusal = &OpenRefusal{Path: p, Rule: rule, Reason: oneLine(reason)}
		return unix.EPERM
	}
	return 0
}

// perform decides and makes the call o (on a worker thread): the new
// descriptor of an open, or the errno (0: done), and the refusal to
// report.
func (w *walker) perform(o op, d1 int, p1 string, d2 int, p2, target string) (int, unix.Errno, *CreateRefusal) {
	// A rename's decisions and the rename itself are one step for the
	// command's other gated calls, which make names (nameMu): nothing
	// the command does puts another file at its source or its
	// destination, nor a file below a moved directory, in between.
	switch o.kind {
	case "rename":
		w.c.nameMu.Lock()
		defer w.c.nameMu.Unlock()
	case "mkdir", "mknod", "symlink", "link":
		w.c.nameMu.RLock()
		defer w.c.nameMu.RUnlock()
	}
	switch o.kind {
	case "open":
		if !w.c.openRoute {
			return w.open(d1, p1, o.flags, o.mode&0o7777&^w.umask)
		}
		// The open route: an existing file is truncated only once it
		// is decided (the kernel truncates at the open, and a refused
		// open of a host's late .env for writing would have emptied
		// it; the fanotify gate refuses before the truncation). That
		// holds for O_RDONLY|O_TRUNC too, which Linux truncates when
		// the caller may write the file (a review emptied a host's
		// late .env with it): such a descriptor cannot ftruncate, so
		// the file is truncated through its /proc/self/fd name, with
		// the same permission and Landlock checks as the open's.
		flags := o.flags
		trunc := flags&unix.O_TRUNC != 0 && flags&unix.O_PATH == 0
		if trunc {
			flags &^= unix.O_TRUNC
		}
		fd, errno, ref := w.open(d1, p1, flags, o.mode&0o7777&^w.umask)
		if fd < 0 || flags&unix.O_PATH != 0 {
			return fd, errno, ref
		}
		if errno := w.decideOpened(fd); errno != 0 {
			unix.Close(fd)
			return -1, errno, ref
		}
		if trunc {
			var st unix.Stat_t
			err := unix.Fstat(fd, &st)
			if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				err = unix.EISDIR // the kernel refuses O_TRUNC on a directory
			}
			if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				if flags&unix.O_ACCMODE == unix.O_RDONLY {
					err = unix.Truncate("/proc/self/fd/"+strconv.Itoa(fd), 0)
				} else {
					err = unix.Ftruncate(fd, 0)
				}
			}
			if err != nil {
				unix.Close(fd)
				return -1, errnoOr(err), ref
			}
		}
		return fd, errno, ref
	case "mkdir", "mknod":
		r, errno := w.walk(d1, p1, false)
		if errno != 0 {
			return -1, errno, nil
		}
		defer r.close()
		if r.obj >= 0 {
			return -1, unix.EEXIST, nil
		}
		if ref, errno := w.decideAt(o.kind, r.parent, r.name); errno != 0 {
			return -1, errno, ref
		}
		var err error
		if o.kind == "mkdir" {
			err = unix.Mkdirat(r.parent, r.name, o.mode&0o7777&^w.umask)
		} else {
			err = unix.Mknodat(r.parent, r.name, o.mode&^w.umask, int(o.dev))
		}
		return -1, errnoOr(err), nil
	case "symlink":
		r, errno := w.walk(d2, p2, false)
		if errno != 0 {
			return -1, errno, nil
		}
		defer r.close()
		if r.obj >= 0 {
			return -1, unix.EEXIST, nil
		}
		if target == "" {
			return -1, unix.ENOENT, nil
		}
		if ref, errno := w.decideAt(o.kind, r.parent, r.name); errno != 0 {
			return -1, errno, ref
		}
		return -1, errnoOr(unix.Symlinkat(target, r.parent, r.name)), nil
	case "link":
		if o.flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
			return -1, unix.EINVAL, nil
		}
		var old resolved
		if p1 == "" && o.flags&unix.AT_EMPTY_PATH != 0 {
			fd, err := dupCloexec(d1)
			if err != nil {
				return -1, unix.EMFILE, nil
			}
			old = resolved{parent: -1, obj: fd}
		} else {
			var errno unix.Errno
			if old, errno = w.walk(d1, p1, o.flags&unix.AT_SYMLINK_FOLLOW != 0); errno != 0 {
				return -1, errno, nil
			}
		}
		defer old.close()
		nw, errno := w.walk(d2, p2, false)
		if errno != 0 {
			return -1, errno, nil
		}
		defer nw.close()
		if nw.obj >= 0 {
			return -1, unix.EEXIST, nil
		}
		if ref, errno := w.decideAt(o.kind, nw.parent, nw.name); errno != 0 {
			return -1, errno, ref
		}
		// The file linked: a denied file or a protected name is not
		// given another name (policy's OpLinkSource).
		src := w.pathIn(old.parent, old.name)
		var oldSt unix.Stat_t
		if old.obj >= 0 {
			// A descriptor's file (AT_EMPTY_PATH, or a /proc magic
			// link): decided by its name, and by its identity from the
			// descriptor, never by what its name leads to now. A name
			// removed since it was opened (an O_TMPFILE's too) reads
			// "NAME (deleted)": decided as NAME (a helper's review: a
			// decoy file named so was what the identity was taken
			// from).
			src, _ = pathOf(old.obj)
			src = strings.TrimSuffix(src, " (deleted)")
			if err := unix.Fstat(old.obj, &oldSt); err != nil {
				return -1, unix.EPERM, &CreateRefusal{Op: o.kind, Path: p1, Rule: "create gate", Reason: oneLine("cannot identify the linked file: " + err.Error())}
			}
		}
		if src == "" {
			return -1, unix.EPERM, &CreateRefusal{Op: o.kind, Path: p1, Rule: "create gate", Reason: "cannot place the linked file"}
		}
		if old.obj >= 0 {
			if refused, rule, reason := w.c.decide("link-source", src); refused {
				return -1, unix.EACCES, &CreateRefusal{Op: o.kind, Path: src, Rule: rule, Reason: reason}
			}
			if ref, errno := w.decideNamed(o.kind, src, &oldSt); errno != 0 {
				return -1, errno, ref
			}
		} else if ref, errno := w.decidePathAs(o.kind, "link-source", src); errno != 0 {
			return -1, errno, ref
		}
		// And under its new name, by the open gate's decider.
		dst := w.pathIn(nw.parent, nw.name)
		if dst == "" {
			return -1, unix.EPERM, &CreateRefusal{Op: o.kind, Path: p2, Rule: "create gate", Reason: "cannot place the link"}
		}
		var ref *CreateRefusal
		if old.obj >= 0 {
			// An unnamed file (O_TMPFILE) too: identified by its
			// descriptor.
			ref, errno = w.decideNamed(o.kind, dst, &oldSt)
		} else {
			ref, errno = w.decideOpenable(o.kind, src, dst)
		}
		if errno != 0 {
			return -1, errno, ref
		}
		if old.obj >= 0 {
			return -1, errnoOr(unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(old.obj), nw.parent, nw.name, unix.AT_SYMLINK_FOLLOW)), nil
		}
		return -1, errnoOr(unix.Linkat(old.parent, old.name, nw.parent, nw.name, 0)), nil
	case "rename":
		old, errno := w.walk(d1, p1, false)
		if errno != 0 {
			return -1, errno, nil
		}
		defer old.close()
		nw, errno := w.walk(d2, p2, false)
		if errno != 0 {
			return -1, errno, nil
		}
		defer nw.close()
		if old.obj >= 0 || nw.obj >= 0 {
			return -1, unix.EBUSY, nil // "/" itself
		}
		if ref, errno := w.decideMoveSource(old.parent, old.name); errno != 0 {
			return -1, errno, ref
		}
		if o.flags&unix.RENAME_EXCHANGE != 0 {
			if ref, errno := w.decideMoveSource(nw.parent, nw.name); errno != 0 {
				return -1, errno, ref
			}
		}
		if o.flags == 0 {
			if done, errno, ref := w.replace(old.parent, old.name, nw.parent, nw.name); done {
				return -1, errno, ref
			}
		}
		if ref, errno := w.decideMove(old.parent, old.name, nw.parent, nw.name); errno != 0 {
			return -1, errno, ref
		}
		if o.flags&unix.RENAME_EXCHANGE != 0 {
			if ref, errno := w.decideMove(nw.parent, nw.name, old.parent, old.name); errno != 0 {
				return -1, errno, ref
			}
		}
		return -1, errnoOr(unix.Renameat2(old.parent, old.name, nw.parent, nw.name, uint(o.flags))), nil
	}
	return -1, unix.ENOSYS, nil
}

// bind binds sock, the init's copy of the caller's socket: a Unix socket's path
// p1 is resolved from d1 as the other calls' are, decided ("bind": a name
// created), and bound relative to the held parent directory (this
// worker's own cwd, set to it: unshare(CLONE_FS)), so the name bound is
// the one decided; any other address is bound as the caller gave it. The
// socket file gets the caller's umask, as the kernel's bind would. What
// getsockname returns for a path socket is the last component only.
func (w *walker) bind(sock int, given []byte, d1 int, p1 string) error {
	if p1 == "" {
		return rawBind(sock, given)
	}
	r, errno := w.walk(d1, p1, false)
	if errno != 0 {
		return errno
	}
	defer r.close()
	var st unix.Stat_t
	if r.obj >= 0 || r.name == "." || r.name == ".." || unix.Fstatat(r.parent, r.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return unix.EADDRINUSE
	}
	if ref, errno := w.decideAt("bind", r.parent, r.name); errno != 0 {
		w.refusal = ref
		return errno
	}
	name := r.name
	if w.c.sharedFS.Load() {
		// No cwd of this worker's own: the parent by its /proc name,
		// and the caller's umask applied after.
		name = "/proc/self/fd/" + strconv.Itoa(r.parent) + "/" + r.name
	} else {
		if err := unix.Fchdir(r.parent); err != nil {
			return err
		}
		// This worker's own cwd: back to the root, holding no
		// directory of the command's.
		defer unix.Fchdir(w.cl.root)
	}
	addr := make([]byte, 2, 2+len(name)+1)
	binary.NativeEndian.PutUint16(addr, unix.AF_UNIX)
	addr = append(append(addr, name...), 0)
	if len(addr) > int(unsafe.Sizeof(unix.RawSockaddrUnix{})) {
		return unix.ENAMETOOLONG
	}
	if err := rawBind(sock, addr); err != nil {
		return err
	}
	if w.c.sharedFS.Load() {
		unix.Fchmodat(r.parent, r.name, 0o777&^w.umask, 0)
	}
	return nil
}

// rawBind is bind(2) with the address as bytes.
func rawBind(fd int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	if _, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(p), uintptr(len(addr))); e != 0 {
		return e
	}
	return nil
}

// replace makes an atomic save (rename(tmp, name)) over an existing
// regular file name that the caller could write in place: policy decides
// it as a replacement ("replace": a protected name that exists and is
// writable, below a write root's top, may be edited; the top ones are
// read-only binds, which fail the open here). done: answered (errno, the
// refusal); otherwise the rename is decided as a creation.
//
// Nothing the command can change is ever moved into the protected name:
// the temporary file is held open (O_PATH, checked to be a regular file)
// and given a second name beside the temporary one (so that it stays
// linkable), the old name is removed, and the held file is linked at the
// name (/proc/self/fd: the file itself, whatever the temporary name holds
// by then); then the temporary and the second name are removed if they
// still hold that file.
// While the name is missing nothing else can be put there (every way of
// making a name comes to this gate, which refuses creating a protected
// name), so the link cannot meet another entry. An earlier version
// exchanged the two names (RENAME_EXCHANGE) and exchanged them back when
// the result was not the checked file: the command could put a symlink
// at the temporary name in between, and the exchange back placed it
// (the second hunt's /etc/passwd symlink).
func (w *walker) replace(dir int, name string, newDir int, newName string) (bool, unix.Errno, *CreateRefusal) {
	if name == "." || name == ".." || newName == "." || newName == ".." {
		return false, 0, nil
	}
	src, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, 0, nil
	}
	defer unix.Close(src)
	var sst, dst unix.Stat_t
	if unix.Fstat(src, &sst) != nil || sst.Mode&unix.S_IFMT != unix.S_IFREG ||
		unix.Fstatat(newDir, newName, &dst, unix.AT_SYMLINK_NOFOLLOW) != nil || dst.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, 0, nil
	}
	// Asked as a rename: a protected name that existed at start is
	// allowed to be made again by open (policy's CreateGuard.Existing),
	// never by a rename, so "open" would send it to the plain rename,
	// which is refused.
	if refused, _, _ := w.c.decide("rename", w.pathIn(newDir, newName)); !refused {
		return false, 0, nil // allowed as a rename: the plain rename
	}
	if sst.Dev == dst.Dev && sst.Ino == dst.Ino {
		return true, 0, nil // two names of one file: rename does nothing
	}
	fd, err := unix.Openat(newDir, newName, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, 0, nil // not writable in place: decided as a creation
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Dev != sst.Dev {
		return false, 0, nil
	}
	d, err := pathOf(newDir)
	if err != nil {
		return false, 0, nil
	}
	p := filepath.Join(d, newName)
	if ref, errno := w.decidePathAs("rename", "replace", p); errno != 0 {
		return true, errno, ref
	}
	if sst.Uid != uint32(w.c.uid) {
		// Linking another's file may be refused (fs.protected_hardlinks)
		// once the name is gone: decided as a creation instead.
		return false, 0, nil
	}
	// A second name beside the temporary one keeps the file linkable
	// whatever the command does to the temporary name meanwhile (a file
	// with no name left cannot be linked again); only the descriptor is
	// linked from, never this name.
	srcPath := "/proc/self/fd/" + strconv.Itoa(src)
	stage := fmt.Sprintf(".%s.save-%d-%d", name, unix.Gettid(), time.Now().UnixNano())
	if len(stage) > 255 {
		stage = fmt.Sprintf(".save-%d-%d", unix.Gettid(), time.Now().UnixNano())
	}
	if err := unix.Linkat(unix.AT_FDCWD, srcPath, dir, stage, unix.AT_SYMLINK_FOLLOW); err != nil {
		if err == unix.ENOENT {
			return true, unix.ENOENT, nil // the temporary file is gone: as rename
		}
		return false, 0, nil // decided as a creation
	}
	defer func() {
		var st unix.Stat_t
		if unix.Fstatat(dir, stage, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == sst.Dev && st.Ino == sst.Ino {
			unix.Unlinkat(dir, stage, 0)
		}
	}()
	if err := unix.Unlinkat(newDir, newName, 0); err != nil {
		if err == unix.ENOENT {
			return false, 0, nil // gone meanwhile: decided as a creation
		}
		return true, errnoOr(err), nil
	}
	if err := unix.Linkat(unix.AT_FDCWD, srcPath, newDir, newName, unix.AT_SYMLINK_FOLLOW); err != nil {
		// The name stays missing (fail closed).
		return true, errnoOr(err), &CreateRefusal{Op: "rename", Path: p, Rule: "create gate", Reason: oneLine("the replacement could not be linked: " + err.Error())}
	}
	var now unix.Stat_t
	if unix.Fstatat(dir, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == sst.Dev && now.Ino == sst.Ino {
		unix.Unlinkat(dir, name, 0) // a rename leaves no temporary name
	}
	return true, 0, nil
}

// pathIn is dir/name, "" when dir cannot be placed.
func (w *walker) pathIn(dir int, name string) string {
	d, err := pathOf(dir)
	if err != nil {
		return ""
	}
	return filepath.Join(d, name)
}

// decideMoveSource decides taking the entry name of dir away from its name
// (policy's "move-source"), and when it is a directory, every entry below
// it (at most renameWalkLimit; past that the rename is refused): a denied
// file the host made after the start, renamed, would be read under a name
// files.deny does not match.
func (w *walker) decideMoveSource(dir int, name string) (*CreateRefusal, unix.Errno) {
	if name == "." || name == ".." {
		return nil, 0
	}
	d, err := pathOf(dir)
	if err != nil {
		return &CreateRefusal{Op: "rename", Path: name, Rule: "create gate", Reason: oneLine(err.Error())}, unix.EPERM
	}
	src := filepath.Join(d, name)
	if ref, errno := w.decidePathAs("rename", "move-source", src); errno != 0 {
		return ref, errno
	}
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, 0
	}
	return eachBelow(src, src, func(p string, _ os.DirEntry) (*CreateRefusal, unix.Errno) {
		if ref, errno := w.decidePathAs("rename", "move-source", p); errno != unix.ENOENT {
			return ref, errno
		}
		return nil, 0 // gone since the walk read it
	})
}

// eachBelow runs decide on every entry below the directory src (at most
// renameWalkLimit), stopping at its first refusal (EACCES); a walk that
// fails or passes its bound refuses the rename too (EPERM, naming at).
func eachBelow(src, at string, decide func(p string, d os.DirEntry) (*CreateRefusal, unix.Errno)) (*CreateRefusal, unix.Errno) {
	n := 0
	var refusal *CreateRefusal
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > renameWalkLimit {
			return fmt.Errorf("more than %d entries below %s to decide", renameWalkLimit, src)
		}
		if p == src {
			return nil
		}
		if ref, errno := decide(p, d); errno != 0 {
			refusal = ref
			return filepath.SkipAll
		}
		return nil
	})
	if refusal != nil {
		return refusal, unix.EACCES
	}
	if err != nil {
		return &CreateRefusal{Op: "rename", Path: at, Rule: "create gate", Reason: oneLine(err.Error())}, unix.EPERM
	}
	return nil, 0
}

// decideMove decides moving the entry name of dir to newName in newDir:
// the new name, and when it is a directory, every name below it as it
// would be there (a directory that holds a protected name, moved into
// place). A move out of the caller's sight (a missing source) is left to
// the kernel.
func (w *walker) decideMove(dir int, name string, newDir int, newName string) (*CreateRefusal, unix.Errno) {
	if ref, errno := w.decideAt("rename", newDir, newName); errno != 0 {
		return ref, errno
	}
	if name == "." || name == ".." {
		return nil, 0
	}
	from, err1 := pathOf(dir)
	to, err2 := pathOf(newDir)
	if err1 != nil || err2 != nil {
		return &CreateRefusal{Op: "rename", Path: newName, Rule: "create gate", Reason: "cannot place the directories"}, unix.EPERM
	}
	src, dst := filepath.Join(from, name), filepath.Join(to, newName)
	// A file under its new name, by the open gate's decider.
	if ref, errno := w.decideOpenable("rename", src, dst); errno != 0 {
		return ref, errno
	}
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, 0
	}
	ref, errno := eachBelow(src, dst, func(p string, d os.DirEntry) (*CreateRefusal, unix.Errno) {
		// A name below is decided as created there (a directory named
		// .git moves with its repository), a symlink as one: it would
		// bring what it leads to under a protected name's directory.
		op := "open"
		switch {
		case d.Type()&os.ModeSymlink != 0:
			op = "symlink"
		case d.IsDir():
			op = "mkdir" // as "open" for the create gate's rules; no name check of its own
		}
		to := dst + strings.TrimPrefix(p, src)
		if ref, errno := w.decidePathAs("rename", op, to); errno != 0 {
			return ref, errno
		}
		if ref, errno := w.decideOpenable("rename", p, to); errno != unix.ENOENT {
			return ref, errno
		}
		return nil, 0 // gone since the walk read it
	})
	if errno == unix.EACCES {
		ref.Reason = fmt.Sprintf("moving %s to %s: %s", src, dst, ref.Reason)
	}
	return ref, errno
}

// open performs open(path, flags, mode): with O_CREAT an existing file is
// opened, a new one created when policy allows it; without it (the open
// route: every open comes here) the file is opened as the kernel would
// open it for the caller.
func (w *walker) open(dir int, path string, flags int, mode uint32) (int, unix.Errno, *CreateRefusal) {
	const oTmpfile = 0o20000000 // __O_TMPFILE
	create := flags&unix.O_CREAT != 0 && flags&unix.O_PATH == 0
	switch {
	case !create:
	case flags&oTmpfile != 0 || flags&unix.O_DIRECTORY != 0:
		return -1, unix.EINVAL, nil // O_CREAT with O_TMPFILE or O_DIRECTORY
	case strings.HasSuffix(path, "/"):
		return -1, unix.EISDIR, nil
	}
	follow := flags&(unix.O_NOFOLLOW|unix.O_EXCL) == 0
	if flags&unix.O_PATH != 0 {
		// O_PATH ignores O_CREAT.
		flags &^= unix.O_CREAT | unix.O_EXCL
	}
	plain := flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC) | unix.O_NOCTTY | unix.O_CLOEXEC
	if !create {
		// O_EXCL without O_CREAT is the caller's (a block device's
		// exclusive open). A trailing slash follows the last component
		// and wants a directory (ENOTDIR otherwise), as O_DIRECTORY.
		follow = flags&unix.O_NOFOLLOW == 0
		plain = flags&^unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_CLOEXEC
		if strings.HasSuffix(path, "/") {
			follow = true
			plain |= unix.O_DIRECTORY
		}
	}
	for try := 0; try < 8; try++ {
		r, errno := w.walk(dir, path, follow)
		if errno != 0 {
			return -1, errno, nil
		}
		if r.obj >= 0 {
			// A directory, or a magic link's target: opened again
			// through the init's descriptor, which is in this thread's
			// own process.
			if w.fifoAside(r.obj, plain) {
				return -1, 0, nil // r.obj is the aside open's now
			}
			// mode: O_TMPFILE's (ignored otherwise). The object is
			// resolved: its /proc/self/fd link is followed whatever the
			// caller's O_NOFOLLOW (which a trailing slash overrides).
			fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(r.obj), plain&^unix.O_NOFOLLOW, mode)
			r.close()
			return fd, errnoOr(err), nil
		}
		// An existing FIFO is opened outside the pool (its open blocks
		// until a peer opens it). A regular file or a missing name is
		// opened here with O_NONBLOCK, which no such open waits on,
		// so that a FIFO put there since cannot block the worker: it
		// is seen and the open made again.
		// What the walk's last step saw is used as it is: a stat made
		// here would be as old by the open.
		var pre unix.Stat_t
		var exists, missing bool
		switch r.seen {
		case statExists:
			pre, exists = r.st, true
		case statMissing:
			missing = true
		default:
			err := unix.Fstatat(r.parent, r.name, &pre, unix.AT_SYMLINK_NOFOLLOW)
			exists, missing = err == nil, err == unix.ENOENT
		}
		if create && exists && flags&unix.O_EXCL != 0 {
			r.close()
			return -1, unix.EEXIST, nil
		}
		// (O_EXCL matters only with O_CREAT: without it a FIFO open
		// blocks all the same.)
		if exists && pre.Mode&unix.S_IFMT == unix.S_IFIFO && flags&unix.O_NONBLOCK == 0 && !(create && flags&unix.O_EXCL != 0) && flags&unix.O_ACCMODE != unix.O_RDWR {
			obj, err := unix.Openat(r.parent, r.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			r.close()
			if err == nil && w.fifoAside(obj, plain) {
				return -1, 0, nil
			}
			if err == nil {
				unix.Close(obj)
			}
			continue // changed since: again
		}
		if exists && pre.Mode&unix.S_IFMT == unix.S_IFREG {
			if errno := w.decideExisting(r.parent, r.name, &pre); errno != 0 {
				r.close()
				return -1, errno, nil
			}
		}
		guard := 0
		if (!exists || pre.Mode&unix.S_IFMT == unix.S_IFREG) && flags&unix.O_NONBLOCK == 0 {
			guard = unix.O_NONBLOCK
		}
		// A name seen missing is not opened first (that open would
		// fail with ENOENT as well): created below, O_EXCL, and
		// opened on the next pass if it was made meanwhile.
		fd, err := -1, error(unix.ENOENT)
		switch {
		case missing:
		case !create && flags&unix.O_ACCMODE == unix.O_RDONLY && flags&unix.O_PATH == 0 && w.callerProcFile(r.parent):
			// A process's file (/proc/PID/maps, ...): the kernel checks
			// ptrace access to PID at the open, against the opener's
			// Landlock domain, which for a worker is not the command's
			// (as magic). Read-only: the init writes nothing there.
			fd, err = w.openProc(r.parent, r.name, plain|guard|unix.O_NOFOLLOW)
		default:
			// mode: O_TMPFILE's in a directory named "." or ".."
			// (ignored otherwise: plain has no O_CREAT).
			fd, err = unix.Openat(r.parent, r.name, plain|guard|unix.O_NOFOLLOW, mode)
		}
		if err == nil && guard != 0 {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				unix.Close(fd)
				r.close()
				continue // not the regular file seen: again
			}
			fl, err2 := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err2 == nil {
				_, err2 = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
			}
			if err2 != nil {
				unix.Close(fd)
				r.close()
				return -1, errnoOr(err2), nil
			}
		}
		if err == unix.EAGAIN && guard != 0 {
			// A lease on the file: O_NONBLOCK would not wait for its
			// break, the caller's open does.
			fd, err = unix.Openat(r.parent, r.name, plain|unix.O_NOFOLLOW, 0)
		}
		if err == unix.ENXIO && guard != 0 {
			r.close()
			continue // a FIFO with no reader put there since: again
		}
		if err == nil {
			if create && flags&unix.O_EXCL != 0 {
				unix.Close(fd)
				fd, err = -1, unix.EEXIST
			}
			r.close()
			return fd, errnoOr(err), nil
		}
		if err == unix.ELOOP {
			// A symlink at the last component.
			r.close()
			switch {
			case create && flags&unix.O_EXCL != 0:
				return -1, unix.EEXIST, nil
			case !follow:
				return -1, unix.ELOOP, nil
			}
			continue // replaced since the walk: again
		}
		if err != unix.ENOENT || flags&unix.O_CREAT == 0 {
			r.close()
			return -1, errnoOr(err), nil
		}
		fd, errno, ref, made := w.create(r.parent, r.name, plain, mode)
		r.close()
		if made {
			return fd, errno, ref
		}
		err = errno
		if err == unix.EEXIST && flags&unix.O_EXCL == 0 {
			continue // created meanwhile: open it
		}
		return fd, errnoOr(err), nil
	}
	return -1, unix.ELOOP, nil
}

// create decides and makes the missing name in parent for an open with
// plain's flags and mode (made: a result to return, refused included),
// as one step for the command's renames (nameMu).
func (w *walker) create(parent int, name string, plain int, mode uint32) (fd int, errno unix.Errno, ref *CreateRefusal, made bool) {
	obj := -1
	func() {
		w.c.nameMu.RLock()
		defer w.c.nameMu.RUnlock()
		if ref, errno = w.decideAt("open", parent, name); errno != 0 {
			fd, made = -1, true
			return
		}
		if obj = w.createMarked(parent, name, plain, mode); obj >= 0 {
			return
		}
		var err error
		fd, err = unix.Openat(parent, name, plain|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, mode)
		errno, made = errnoOr(err), err == nil
	}()
	if obj < 0 {
		return fd, errno, ref, made
	}
	// createMarked's file, opened through its descriptor outside the
	// lock (another process of the command may hold a lease on it by
	// now, and the open would wait for its break). The kernel does not
	// truncate a file its open made (O_TRUNC here would change its
	// times, and clear the mark).
	defer unix.Close(obj)
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(obj), plain&^(unix.O_NOFOLLOW|unix.O_TRUNC), 0)
	return fd, errnoOr(err), nil, true
}

// createMarked makes the missing name in parent for an open with plain's
// flags so that the fanotify open gate has nothing to decide at its open:
// an open(O_CREAT) that makes a file is a permission event like any other,
// and its answer, a round trip to sandboxd, cost as much as the create
// gate's own (docs/benchmarks.md, "Creating names"). So the file is made
// without opening it (mknodat, S_IFREG: the same mode, umask, owner and
// Landlock check as the open's), taken by an O_PATH descriptor (no event),
// given the group's ignore mark when it is an empty regular file with that
// one name and the open gate's decider (openDecide, the same policy as
// the gate's) allows it where the gate decides (markIgnored: the mark goes
// if its times changed meanwhile), and then opened through that
// descriptor (by create, once the name lock is let go). What makes it
// sound is the mark's own rule: an empty file has nothing to read, and a
// write to it clears the mark, so the next open is decided by its name
// then (a host that fills it and renames it to .env: TestFSDeniedLater,
// row createdrenamed; what the mark does not see, a host's mmap or AIO
// write, is in docs/limits.md). The name was decided before (decideAt,
// which asks the open gate's decider too); the decider is asked again for
// the file as made (an identity of a file hidden at start, on a device
// it cannot map), and a file it refuses is opened unmarked, and decided
// at that open as before.
//
// It returns the file's O_PATH descriptor, or -1 when nothing was made
// (no group; a default ACL on parent, or an access the mode does not give
// the owner, where the kernel's open(O_CREAT) behaves otherwise; mknod
// failed), or when the name no longer holds a regular file once taken
// (nameMu keeps the command's renames out of that moment; a host's is
// not): the caller's own open(O_CREAT|O_EXCL) follows, as before, and
// fails with EEXIST or opens what is there now, as when another process
// made it first.
func (w *walker) createMarked(parent int, name string, plain int, mode uint32) (obj int) {
	need := uint32(0o400) // the group's mark needs read access
	switch plain & unix.O_ACCMODE {
	case unix.O_RDONLY:
	case unix.O_WRONLY, unix.O_RDWR:
		need |= 0o200
	default:
		return -1
	}
	if w.c.openGroup < 0 || w.c.openDecide == nil || mode&^uint32(w.cl.umask)&need != need {
		return -1
	}
	if _, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(parent), "system.posix_acl_default", nil); err != unix.ENODATA && err != unix.EOPNOTSUPP {
		return -1 // a default ACL: the mode is the ACL's, not mode's
	}
	if unix.Mknodat(parent, name, unix.S_IFREG|mode, 0) != nil {
		return -1
	}
	obj, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1 // gone since: the open makes it again
	}
	var st unix.Stat_t
	if unix.Fstat(obj, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(obj)
		return -1 // not the file made: replaced since by the host
	}
	// Marked only while nothing can be read in it: empty, with this one
	// name. Grown or linked meanwhile (another process of the command
	// writes it), it is handed over as made, unmarked.
	if st.Size == 0 && st.Nlink == 1 {
		if path, err := pathOf(obj); err == nil && strings.HasPrefix(path, "/") {
			if refused, _, _ := w.c.openRefused(path, &st); !refused {
				markIgnored(w.c.openGroup, obj, true, st)
			}
		}
	}
	return obj
}

func errnoOr(err error) unix.Errno {
	if err == nil {
		return 0
	}
	if errno, ok := err.(unix.Errno); ok {
		return errno
	}
	return unix.EPERM
}

// refusedLine is the control socket line that reports a refusal.
func refusedLine(r CreateRefusal) string {
	b, _ := json.Marshal(r)
	return "refused " + string(b) + "\n"
}
