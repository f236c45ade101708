package supervisor

import (
	"fmt"
	"os"
	"runtime"

	"github.com/barry-rocks/sandbox/procjail"
)

// resolverFiles are read by the proxy's resolver on the host (Go's
// resolver: the hosts table, and nsswitch.conf for the order of files and
// DNS); they are read-only inside the sandbox. /etc/resolv.conf is already
// covered by the sandbox's own.
var resolverFiles = []string{"/etc/hosts", "/etc/nsswitch.conf"}

// jailSpec gathers what the jail is given: the environment, the forwards,
// the read-only paths, the hook ruling server (with a policy file) and the
// filesystem plan.
func (s *session) jailSpec() (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	env := sandboxEnv(s.hostEnv, s.id, s.secret, self)
	proxyForward := procjail.Forward{InsidePort: ProxyInsidePort, Network: "tcp", Target: s.proxySock, Attribute: "http"}
	if s.pass != nil {
		proxyForward = procjail.Forward{InsidePort: ProxyInsidePort, Network: "pass"}
	}
	s.forwards = []procjail.Forward{
		proxyForward,
		{InsidePort: 53, Network: "udp", Target: s.dnsSock, Attribute: "dns"},
		{InsidePort: 53, Network: "tcp", Target: s.dnsSock, Attribute: "dns"},
	}
	if runtime.GOOS == "linux" {
		// Programs that ignore the proxy variables: each of their TCP
		// connections goes to the proxy by the name it carries.
		s.forwards = append(s.forwards, procjail.Forward{InsidePort: CaptureInsidePort, Network: "capture",
			Target: s.proxySock, Authorization: procjail.BasicProxyAuth(s.id, s.secret)})
	}
	// The runtime directory and the policy file's directory are read-only
	// inside: an agent cannot grant itself a domain by editing them.
	s.readOnly = []string{s.dir}
	if s.launched != nil {
		// The session's configuration in a launched harness's private
		// home, whose rest is the harness's writable state.
		s.readOnly = append(s.readOnly, s.launched.homeFiles...)
		s.readOnly = append(s.readOnly, s.launched.projectDirs...)
	}
	// The proxy's resolver runs out here and reads the host's /etc/hosts
	// and nsswitch.conf: a sandbox started by root could otherwise add
	// "ADDR allowed.name" and have the proxy take an allowed name to any
	// address, or turn its DNS off. (A file bind is detached when the host
	// renames a new file over it, and a missing /etc/hosts cannot be bound;
	// a filesystem policy is what closes that for good.)
	for _, f := range resolverFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			s.readOnly = append(s.readOnly, f)
		}
	}
	// With a session policy, hookgate inside the sandbox asks sandboxd for
	// rulings (a policy edit applies to the next call); a host socket named
	// by an outer BARRY_HOOK_SOCKET is out of reach inside and is dropped.
	s.env = s.launched.env(withoutEnv(env, "BARRY_HOOK_SOCKET"))
	if s.launched != nil {
		s.forwards = append(s.forwards, s.launched.forwards...)
	}
	var cleanup func()
	if s.opts.PolicyFile != "" {
		if cleanup, err = s.startHookServer(); err != nil {
			return cleanup, err
		}
	}
	s.fsPlan, err = planFilesystem(s.setupCtx, &s.opts, s.live.Current(), s.readOnly)
	if err != nil {
		return cleanup, err
	}
	if s.launched != nil {
		// The harness reads its session configuration inside (read-only:
		// the runtime directory is); a private /tmp would cover it.
		s.fsPlan.Reveal(s.launched.dir)
	}
	if err := s.placeholders(); err != nil {
		return cleanup, err
	}
	if err := s.sealCredentials(); err != nil {
		return cleanup, err
	}
	if s.fsPlan.AllWritable {
		fmt.Fprintln(s.stderr, "sandboxd: write root /: the whole host filesystem is writable inside this sandbox")
	}
	s.landlockABI = procjail.LandlockABI()
	return cleanup, nil
}
