package shell

import (
	"strings"

	"github.com/barry-rocks/sandbox/policy"
)

// The network family: HTTP clients (curl, wget, httpie and its xh port)
// and raw socket tools (netcat and its variants, telnet, socat).
func netPrograms() map[string]*program {
	return map[string]*program{
		"curl": {run: curlRun, nonExec: true, actions: curlActions, hosts: curlHosts, writes: curlWrites},
		"wget": {nonExec: true, actions: wgetActions, hosts: wgetHosts, writes: wgetWrites},

		"http": httpie, "https": httpie, "httpie": httpie, "xh": httpie, "xhs": httpie,

		// A raw socket carries any protocol, so it gets every leaf action.
		"nc": netcat, "ncat": netcat, "netcat": netcat, "telnet": netcat,
		"socat": {actions: everyAction, hosts: socatHosts},
	}
}

// --- curl ---

var curlOpts = optSpec{
	short: "AbcCdDeEFHKmoPQrTtuUwxXyYz",
	long: []string{"user-agent", "cookie", "cookie-jar", "continue-at", "data", "data-raw", "data-binary", "data-ascii",
		"data-urlencode", "json", "dump-header", "referer", "cert", "form", "form-string", "header", "config", "max-time",
		"output", "ftp-port", "quote", "range", "upload-file", "telnet-option", "user", "proxy-user", "write-out", "proxy",
		"request", "speed-limit", "speed-time", "time-cond", "url", "resolve", "connect-to", "output-dir", "trace",
		"trace-ascii", "connect-timeout", "retry", "retry-delay", "retry-max-time", "cacert", "capath", "key", "pass",
		"max-filesize", "limit-rate", "interface", "local-port", "oauth2-bearer", "etag-save", "etag-compare", "variable",
		"expect100-timeout", "happy-eyeballs-timeout-ms", "dns-servers", "doh-url", "preproxy", "proxy-header", "request-target",
		"unix-socket", "abstract-unix-socket", "aws-sigv4", "url-query", "hsts", "alt-svc", "netrc-file", "mail-from", "mail-rcpt"},
}

func curlRun(a *analyzer, inv invocation, _ stdin, _ int) {
	a.record(inv)
	for _, w := range inv.args[1:] {
		if w.val == "-K" || strings.HasPrefix(w.val, "--config") || (strings.HasPrefix(w.val, "-") && !strings.HasPrefix(w.val, "--") && strings.Contains(w.val, "K")) {
			a.fail("curl -K reads URLs and options from a file")
			return
		}
	}
	a.commandWrites(inv)
}

func curlActions(inv invocation) []string {
	args := inv.args
	if all := curlAllOpts(args); len(all.strs) == 0 && !all.has("--url") && !hasDynamic(args) {
		return nil // curl --version, curl -h: no transfer
	}
	return []string{curlMethod(args)}
}

func curlHosts(inv invocation) []string {
	var h hostList
	all := curlAllOpts(inv.args)
	for _, w := range all.strs {
		if !w.dyn {
			h.url(w.val)
		}
	}
	for _, w := range all.seen["--url"] {
		h.url(w.val)
	}
	// The proxy is the host curl connects to.
	for _, f := range []string{"-x", "--proxy", "--preproxy"} {
		for _, w := range all.seen[f] {
			if !w.dyn {
				h.url(w.val)
			}
		}
	}
	for _, w := range append(all.seen["--resolve"], all.seen["--connect-to"]...) {
		parts := strings.Split(w.val, ":")
		if len(parts) >= 1 {
			h.url(parts[0])
		}
		if len(parts) >= 3 && parts[2] != "" {
			h.url(strings.Trim(strings.Split(parts[2], ",")[0], "[]"))
		}
	}
	return h
}

func curlWrites(a *analyzer, inv invocation) {
	// Options may follow the URL: "curl URL --output out".
	o := curlAllOpts(inv.args)
	for _, f := range []string{"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--output-dir", "--etag-save"} {
		if v, ok := o.val(f); ok && !harmlessSink(v.val) {
			a.write(v.val, "curl "+f)
			return
		}
	}
	if o.has("-O", "--remote-name", "--remote-name-all", "-J") {
		a.write("", "curl -O")
	}
}

// curlMethod decides read or write for curl, in the order curl's manual
// gives: -G/-I read; data flags write; -X by method; otherwise read.
func curlMethod(args []word) string {
	for _, w := range args[1:] {
		if w.dyn && w.mayBeOption() {
			return policy.ActionHTTPWrite
		}
	}
	// Options after operands are still options to curl.
	all := curlAllOpts(args)
	if all.has("-G", "--get", "-I", "--head") {
		return policy.ActionHTTPRead
	}
	if all.has("-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-F", "--form", "--form-string", "-T", "--upload-file") {
		return policy.ActionHTTPWrite
	}
	if m, ok := all.val("-X", "--request"); ok && !readMethod(m.val) {
		return policy.ActionHTTPWrite
	}
	return policy.ActionHTTPRead
}

// curlAllOpts scans curl's options anywhere in argv (curl accepts options
// after URLs).
func curlAllOpts(args []word) opts {
	all := opts{seen: map[string][]word{}}
	i := 1
	for i < len(args) {
		o := scanOpts(args, i, curlOpts)
		for k, v := range o.seen {
			all.seen[k] = append(all.seen[k], v...)
		}
		if o.next >= len(args) {
			break
		}
		if o.next > i && args[o.next-1].val == "--" {
			break
		}
		all.strs = append(all.strs, args[o.next])
		i = o.next + 1
	}
	return all
}

// --- wget ---

var wgetOpts = optSpec{
	short: "OoaPUeiTtwQlABDIXR",
	long: []string{"output-document", "output-file", "append-output", "directory-prefix", "user-agent", "execute",
		"input-file", "timeout", "tries", "wait", "quota", "level", "accept", "reject", "domains", "include-directories",
		"exclude-directories", "header", "post-data", "post-file", "method", "body-data", "body-file", "user", "password",
		"referer", "load-cookies", "save-cookies", "bind-address", "limit-rate", "ca-certificate", "certificate", "private-key"},
}

func wgetActions(inv invocation) []string {
	args := inv.args
	if len(operands(args, wgetOpts)) == 0 && !hasDynamic(args) {
		o := scanOpts(args, 1, wgetOpts)
		if !o.has("-i", "--input-file") {
			return nil
		}
	}
	o := scanOpts(args, 1, wgetOpts)
	if o.bad != "" {
		return []string{policy.ActionHTTPRead, policy.ActionHTTPWrite}
	}
	if o.has("--post-data", "--post-file", "--body-data", "--body-file") {
		return []string{policy.ActionHTTPWrite}
	}
	if m, ok := o.val("--method"); ok && !readMethod(m.val) {
		return []string{policy.ActionHTTPWrite}
	}
	return []string{policy.ActionHTTPRead}
}

func wgetHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, wgetOpts) {
		if !w.dyn {
			h.url(w.val)
		}
	}
	return h
}

func wgetWrites(a *analyzer, inv invocation) {
	args := inv.args
	o := scanOpts(args, 1, wgetOpts)
	if o.has("--spider") || len(operands(args, wgetOpts)) == 0 && !o.has("-i", "--input-file") && !hasDynamic(args) {
		return
	}
	if v, ok := o.val("-O", "--output-document"); ok {
		if !harmlessSink(v.val) {
			a.write(v.val, "wget -O")
		}
		return
	}
	a.write("", "wget")
}

// --- httpie (http, https) and xh (xh, xhs) ---

var httpie = &program{actions: httpieActions, hosts: httpieHosts}

// httpieOpts is httpie's grammar, for its method and its host alike: a
// long option's value is never its URL ("http --session NAME HOST" goes to
// HOST; read with the short letters only, NAME was taken for the host and
// HOST went unchecked).
var httpieOpts = optSpec{short: "abAvp", long: []string{"auth", "auth-type", "verify", "cert", "cert-key", "proxy", "session", "session-read-only", "output", "print", "timeout", "pretty", "style", "format-options", "boundary", "chunked-size", "max-redirects", "max-headers", "ssl", "ciphers", "unsorted", "response-charset", "response-mime"}}

func httpieActions(inv invocation) []string { return []string{httpieMethod(inv.args)} }

func httpieHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, httpieOpts) {
		if w.dyn || isAlpha(w.val) && w.val == strings.ToUpper(w.val) {
			continue
		}
		h.url(w.val)
		break
	}
	return h
}

func httpieMethod(args []word) string {
	o := scanOpts(args, 1, httpieOpts)
	if o.has("-f", "--form", "--raw", "--multipart") {
		return policy.ActionHTTPWrite
	}
	ops := args[o.next:]
	if len(ops) == 0 {
		return policy.ActionHTTPRead
	}
	if m := ops[0].val; m == strings.ToUpper(m) && isAlpha(m) {
		if readMethod(m) {
			return policy.ActionHTTPRead
		}
		return policy.ActionHTTPWrite
	}
	for _, w := range ops[1:] {
		if w.dyn || strings.Contains(w.val, "=") && !strings.Contains(w.val, "==") || strings.Contains(w.val, ":=") || strings.Contains(w.val, "@") {
			return policy.ActionHTTPWrite
		}
	}
	return policy.ActionHTTPRead
}

func isAlpha(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// --- raw sockets: nc, ncat, netcat, telnet, socat ---

var netcat = &program{actions: everyAction, hosts: netcatHosts}

var netcatOpts = optSpec{short: "pswiqxXeco"}

// netcatHosts returns the first operand that is not a port.
func netcatHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, netcatOpts) {
		if !w.dyn && !isDigits(w.val) {
			h.url(w.val)
			break
		}
	}
	return h
}

// socatHosts returns the hosts of socat's TCP*, UDP* and OPENSSL*
// addresses (TYPE:HOST:PORT[,OPTIONS]).
func socatHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, optSpec{}) {
		parts := strings.Split(w.val, ":")
		if len(parts) >= 3 && strings.HasPrefix(strings.ToUpper(parts[0]), "TCP") || len(parts) >= 3 && strings.HasPrefix(strings.ToUpper(parts[0]), "UDP") || len(parts) >= 3 && strings.HasPrefix(strings.ToUpper(parts[0]), "OPENSSL") {
			h.url(strings.Split(parts[1], ",")[0])
		}
	}
	return h
}
