package shell

import (
	"strings"

	"github.com/barry-rocks/sandbox/policy"
	"mvdan.cc/sh/v3/syntax"
)

// The remote family: ssh and the copy tools that run over it (scp, sftp,
// rsync).
func remotePrograms() map[string]*program {
	return map[string]*program{
		"ssh":   {run: sshRun, actions: sshActions, hosts: sshHosts},
		"scp":   {run: scpRun, actions: remoteCopyActions(scpOpts), hosts: scpHosts, writes: remoteCopyWrites},
		"sftp":  {run: scpRun, actions: sftpActions, hosts: scpHosts},
		"rsync": {run: rsyncRun, actions: remoteCopyActions(rsyncOperandOpts), hosts: rsyncHosts, writes: remoteCopyWrites},
	}
}

// --- ssh ---

var sshValueShort = "BbcDEeFIiJLlmOoPpQRSWw"

var sshOpts = optSpec{short: sshValueShort}

func sshRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	args := inv.args
	o := scanOpts(args, 1, sshOpts)
	if o.bad != "" {
		a.fail("option of ssh is not static: " + o.bad)
		return
	}
	for _, v := range o.seen["-o"] {
		a.sshOption(v, depth)
	}
	if o.next+1 < len(args) {
		a.joinedString("ssh remote command", args[o.next+1:], depth)
	}
}

var reSSHCmdOpt = &lazyRegexp{pattern: `(?i)^\s*(proxycommand|localcommand|knownhostscommand|remotecommand)\s*[= ]\s*(.*)$`}

// sshOption analyses the command an ssh -o option runs (ProxyCommand,
// LocalCommand...).
func (a *analyzer) sshOption(v word, depth int) {
	if v.dyn {
		a.fail("ssh -o with a value that is not static: " + v.val)
		return
	}
	if m := reSSHCmdOpt.FindStringSubmatch(v.val); m != nil {
		if strings.EqualFold(m[2], "none") {
			return
		}
		a.source(m[2], syntax.LangBash, depth+1)
	}
}

func sshActions(inv invocation) []string {
	if sshDest(inv.args) != "" {
		return []string{policy.ActionSSHRead}
	}
	return nil
}

func sshHosts(inv invocation) []string {
	var h hostList
	if d := sshDest(inv.args); d != "" {
		h.url(d)
	}
	sshJumpHosts(inv.args, &h)
	return h
}

func sshDest(args []word) string {
	o := scanOpts(args, 1, sshOpts)
	if o.next < len(args) {
		return args[o.next].val
	}
	return ""
}

// sshJumpHosts adds the jump hosts and a HostName override of ssh, scp or
// sftp, which are where ssh connects: "ssh -J evil.example good.example",
// "ssh -o HostName=evil.example good.example".
func sshJumpHosts(args []word, h *hostList) {
	o := scanAll(args, 1, sshOpts)
	for _, w := range o.seen["-J"] {
		for _, j := range strings.Split(w.val, ",") {
			h.url(jumpHost(j))
		}
	}
	for _, w := range o.seen["-o"] {
		k, v, ok := strings.Cut(w.val, "=")
		if !ok {
			k, v, _ = strings.Cut(strings.TrimSpace(w.val), " ")
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "hostname":
			h.url(strings.TrimSpace(v))
		case "proxyjump":
			for _, j := range strings.Split(strings.TrimSpace(v), ",") {
				h.url(jumpHost(j))
			}
		}
	}
}

// jumpHost returns the host of an ssh jump spec: [user@]host[:port] or
// ssh://[user@]host[:port].
func jumpHost(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "ssh://")
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			return s[1:i]
		}
	}
	if i := strings.IndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 {
		s = s[:i]
	}
	return s
}

// --- scp, sftp ---

var scpOpts = optSpec{short: "cFiJlPoSBDX"}

func scpRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	o := scanOpts(inv.args, 1, scpOpts)
	for _, v := range o.seen["-o"] {
		a.sshOption(v, depth)
	}
	if v, ok := o.val("-S"); ok {
		a.command([]word{v}, stdin{}, depth+1)
	}
	a.commandWrites(inv)
}

// sftpActions: sftp with a destination both reads and writes (its
// commands come from stdin or a batch file).
func sftpActions(inv invocation) []string {
	if len(operands(inv.args, scpOpts)) > 0 {
		return []string{policy.ActionSSHRead, policy.ActionSSHWrite}
	}
	return nil
}

// scpHosts serves scp and sftp: the jump hosts, then the remote operands
// (every operand of sftp is a destination).
func scpHosts(inv invocation) []string {
	var h hostList
	sshJumpHosts(inv.args, &h)
	for _, w := range operands(inv.args, scpOpts) {
		if !w.dyn && (isRemote(w.val) || inv.prog == "sftp") {
			h.scp(w.val)
		}
	}
	return h
}

// --- rsync ---

// rsyncOpts is the grammar the command is analysed with (-e, --rsync-path);
// rsyncOperandOpts, a shorter list, is the one its actions and hosts find
// the operands with. The two disagree on --compare-dest, --copy-dest,
// --link-dest, --out-format, --max-size and --min-size (a value to one, a
// flag followed by an operand to the other); kept as found, since the move
// changes no behaviour, to be settled on one table.
var (
	rsyncOpts        = optSpec{short: "eBfT", long: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from", "files-from", "temp-dir", "log-file", "partial-dir", "backup-dir", "suffix", "chmod", "password-file", "bwlimit", "timeout", "port", "compare-dest", "copy-dest", "link-dest", "out-format", "max-size", "min-size"}}
	rsyncOperandOpts = optSpec{short: "eBfT", long: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from", "files-from", "temp-dir", "log-file", "partial-dir", "backup-dir", "suffix", "chmod", "password-file", "bwlimit", "timeout", "port"}}
)

func rsyncRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	o := scanOpts(inv.args, 1, rsyncOpts)
	for _, v := range append(o.seen["-e"], o.seen["--rsh"]...) {
		a.codeString("rsync -e", v, syntax.LangBash, depth)
	}
	if v, ok := o.val("--rsync-path"); ok {
		a.codeString("rsync --rsync-path", v, syntax.LangBash, depth)
	}
	a.commandWrites(inv)
}

func rsyncHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, rsyncOperandOpts) {
		if !w.dyn && isRemote(w.val) {
			h.scp(w.val)
		}
	}
	return h
}

// --- shared by scp and rsync ---

// remoteCopyActions reads SOURCE... DEST: a remote source is read, a
// remote destination written.
func remoteCopyActions(sp optSpec) func(invocation) []string {
	return func(inv invocation) []string {
		ops := operands(inv.args, sp)
		var out []string
		for i, w := range ops {
			if !isRemote(w.val) {
				continue
			}
			if i == len(ops)-1 && len(ops) > 1 {
				out = append(out, policy.ActionSSHWrite)
			} else {
				out = append(out, policy.ActionSSHRead)
			}
		}
		return out
	}
}

// remoteCopyWrites records a local destination (the last operand).
func remoteCopyWrites(a *analyzer, inv invocation) {
	ops := writeOperands(inv.args)
	if len(ops) > 1 {
		dst := ops[len(ops)-1].val
		if isRemote(dst) {
			return
		}
		a.write(dst, inv.prog)
	}
}

// isRemote reports whether an scp/rsync operand names a remote location.
func isRemote(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return false
	}
	return !strings.Contains(s[:i], "/")
}
