package procjail

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FileSystem is the command's view of the host filesystem. The zero value
// (with Confine unset) leaves the host's filesystem as it is; sandboxd
// always sets Confine.
//
// With Confine set, on Linux, the init builds the view in the sandbox's
// mount namespace and Landlock holds the writes a second time:
//
//   - every host mount is read-only inside;
//   - /tmp, /var/tmp and /dev/shm are fresh, private tmpfs (gone with the
//     sandbox);
//   - HomeOverlay, when set, gets a writable layer whose changes are
//     discarded when the sandbox ends (caches: ~/.npm, ~/.cache, ~/go, ...);
//   - WriteRoots are bound writable, as the host has them (a write there
//     lands on the host);
//   - Protected paths are bound read-only over themselves, inside write
//     roots too (those that do not exist are reported, not created);
//   - Hidden paths are masked by an empty, unreadable, read-only directory
//     or file of the same kind.
//
// Every path must be absolute and clean, with its symlinks resolved (the
// caller canonicalizes them: a symlink would be followed by the mount).
type FileSystem struct {
	// Confine turns the filesystem layer on.
	Confine bool `json:"confine"`
	// WriteRoots are directories (or files) writable inside.
	WriteRoots []string `json:"writeRoots,omitempty"`
	// Protected are read-only even inside a write root.
	Protected []string `json:"protected,omitempty"`
	// Hidden are masked: neither readable nor writable.
	Hidden []string `json:"hidden,omitempty"`
	// HomeOverlay is the home directory given a discarded writable layer;
	// "" leaves home read-only (unless a write root holds it).
	HomeOverlay string `json:"homeOverlay,omitempty"`
	// Pinned are directories bound over themselves, writable as they are:
	// a mount point cannot be renamed or removed, so the protected and
	// hidden paths below them stay where the plan put them.
	Pinned []string `json:"pinned,omitempty"`
	// Identity is, for the protected, hidden and pinned paths that existed
	// when the sandbox was planned, the file each one was: the init mounts
	// over that file or refuses to start.
	Identity map[string]FileID `json:"identity,omitempty"`
	// Revealed are paths inside Hidden directories that stay visible (the
	// allowOnly paths and the workspace under a hidden home): their
	// hidden ancestors become empty directories that hold only them.
	Revealed []string `json:"revealed,omitempty"`
	// Placeholders are protected files that do not exist, made in the
	// discarded home layer (holding "{}\n", empty settings) and bound
	// read-only like the rest of Protected, where the command could
	// otherwise make them and a running harness load them (a settings
	// file with a hook of its own). Each must lie below HomeOverlay and
	// in no write root, and be in Protected.
	Placeholders []string `json:"placeholders,omitempty"`
	// CreateGuard, when set, turns the create gate on (Linux): every
	// creation of a name (open with O_CREAT, mkdir, mknod, rename, link,
	// symlink) is decided by CreateDecider(CreateGuard) and made by the
	// init on the caller's behalf; a refused one fails with EACCES and
	// is reported to Spec.OnCreateRefused. Opaque here: the rules are
	// policy's.
	CreateGuard json.RawMessage `json:"createGuard,omitempty"`
	// OpenGuard, when set, turns the open gate's seccomp route on
	// (Linux; it needs CreateGuard, whose machinery it uses): every open,
	// openat and creat goes to the init, which resolves and makes it as
	// the create gate makes a creation, and decides each regular file it
	// opened or created by OpenGuardDecider(OpenGuard); a
	// refused one is closed, fails with EPERM and is reported to
	// Spec.OnOpenRefused. Opaque here: the rules are policy's.
	OpenGuard json.RawMessage `json:"openGuard,omitempty"`
	// MarkGuard, with the fanotify open gate (Spec.OpenGate) and the
	// create gate, is that gate's decisions in OpenGuard's form: a file
	// the create gate makes for an open at or below OpenRoots gets the
	// gate's ignore mark, and its open is no event, only when
	// OpenGuardDecider(MarkGuard) allows it (createMarked); and, as with
	// OpenGuard, no name is made or given there that it refuses, nor to
	// a regular file it refuses by identity.
	MarkGuard json.RawMessage `json:"markGuard,omitempty"`
	// OpenRoots are where OpenGuard's or MarkGuard's decider decides, as
	// the fanotify gate's marks do (OpenGateOptions.Roots): a file at or
	// below one of them; one elsewhere (the sandbox's private /tmp, /usr)
	// is made and opened as any other but not decided.
	OpenRoots []string `json:"openRoots,omitempty"`
}

// CreateDecider builds, from FileSystem.CreateGuard, the function that
// decides one creation at path (clean, absolute, its parent resolved) by
// op (open, mkdir, mknod, symlink, link, rename: the entry a link or a
// rename places there is not made by name): refused, with the rule and
// the reason. The binary that runs the init sets it before RunInit
// (sandboxd: policy's CreateGuard.DecidePlace); with a guard and no
// decider the sandbox does not start.
var CreateDecider func(guard []byte) (func(op, path string) (refused bool, rule, reason string), error)

// OpenGuardDecider builds, from FileSystem.OpenGuard, the function that
// decides one opened regular file: at path (as the kernel names the open
// file), whose device and inode numbers are dev and ino; known says
// whether dev is a device of the host's (a bind mount's), otherwise (the
// home overlay's own device, the sandbox's tmpfs) only the inode number
// can be compared. It returns refused, the rule and the reason, and must
// be safe for concurrent use. The binary that runs the init sets it
// before RunInit (sandboxd: policy's OpenDeciderFor); with a guard and
// no decider the sandbox does not start.
var OpenGuardDecider func(guard []byte) (func(path string, dev, ino uint64, known bool) (refused bool, rule, reason string), error)

// CreateRefusal is one creation the create gate refused (or could not
// decide: Rule "create gate").
type CreateRefusal struct {
	Op     string `json:"op"`   // open, mkdir, mknod, rename, link, symlink, bind
	Path   string `json:"path"` // the name refused, as the sandbox sees it
	Pid    int    `json:"pid"`  // the caller's process, as the sandbox numbers it
	Comm   string `json:"comm,omitempty"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Validate reports the first path that is not absolute and clean.
func (f *FileSystem) Validate() error {
	for _, l := range []struct {
		name  string
		paths []string
	}{{"writeRoots", f.WriteRoots}, {"protected", f.Protected}, {"hidden", f.Hidden}, {"revealed", f.Revealed}, {"pinned", f.Pinned}, {"placeholders", f.Placeholders}, {"homeOverlay", nonEmpty(f.HomeOverlay)}, {"openRoots", f.OpenRoots}} {
		for i, p := range l.paths {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
				return fmt.Errorf("filesystem.%s[%d]: %q is not a clean absolute path", l.name, i, p)
			}
		}
	}
	return nil
}

// FileID identifies a file: its device and inode numbers.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// Identify records the FileID of each path that exists (not following a
// final symlink), for FileSystem.Identity.
func Identify(paths ...[]string) map[string]FileID {
	ids := map[string]FileID{}
	for _, l := range paths {
		for _, p := range l {
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ids[p] = FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
			}
		}
	}
	return ids
}
