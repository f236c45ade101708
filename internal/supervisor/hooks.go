package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/procjail"
)

// startHookServer binds the policy's directory read-only and starts the
// hook ruling server, forwarded inside.
func (s *session) startHookServer() (func(), error) {
	// The policy's directory is bound read-only inside. Binding only the
	// file would not hold: when an editor on the host renames a new
	// version over it, the kernel detaches mounts on the replaced
	// dentry in every namespace, and the sandbox could then edit the
	// new file. The watcher holds the directory open, so moving it away
	// and putting another in its place substitutes nothing. A policy
	// directory that holds the working directory would make the
	// workspace read-only, so it is refused with a clear reason.
	roPolicy := filepath.Dir(s.live.Path())
	if real, err := filepath.EvalSymlinks(roPolicy); err == nil {
		roPolicy = real
	}
	cwd := s.opts.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	if cwd == roPolicy || strings.HasPrefix(cwd, strings.TrimSuffix(roPolicy, "/")+"/") {
		return nil, fmt.Errorf("the policy file's directory %s holds the working directory %s; the sandbox makes the policy's directory read-only, so keep the policy in a directory of its own", roPolicy, cwd)
	}
	s.readOnly = append(s.readOnly, roPolicy)
	hookSock := filepath.Join(s.dir, "hooks.sock")
	hln, err := hooks.ListenUnix(hookSock)
	if err != nil {
		return nil, fmt.Errorf("hook ruling server: %w", err)
	}
	cur := s.live.Current()
	if cur.rulings, err = cur.engine(); err != nil {
		return func() { hln.Close() }, fmt.Errorf("hook ruling server: %w", err)
	}
	s.hsrv = hooks.NewServer(cur.rulings, s.log)
	hctx, hcancel := context.WithCancel(context.Background())
	go s.hsrv.Serve(hctx, hln)
	s.forwards = append(s.forwards, procjail.Forward{InsidePort: HookInsidePort, Network: "tcp", Target: hookSock})
	s.env = append(s.env, fmt.Sprintf("BARRY_HOOK_SOCKET=tcp:127.0.0.1:%d", HookInsidePort))
	return func() { hcancel(); hln.Close() }, nil
}
