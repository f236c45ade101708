//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// captureScript runs, inside the sandbox, clients that read no proxy
// variable (or, with them unset, none that would): Node's fetch and
// http.get, a Go program with a transport of its own, Python's
// socket.create_connection with TLS, and curl told to ignore the proxy.
// Each line it prints is "LABEL: RESULT".
const captureScript = `
node_fetch() { node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t), e => console.log("refused", (e.cause && e.cause.code) || e.message))' "$1"; }
node_get() { node -e 'const u = process.argv[1]; require(u.startsWith("https") ? "https" : "http").get(u, r => { let d = ""; r.on("data", c => d += c); r.on("end", () => console.log(d)); }).on("error", e => console.log("refused", e.code || e.message))' "$1"; }
py_tls() { python3 -c '
import socket, ssl, sys
addr, port, sni = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    s = socket.create_connection((addr, port), timeout=10)
    t = ssl.create_default_context().wrap_socket(s, server_hostname=sni)
    t.sendall(("GET /py HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni).encode())
    print(t.recv(4096).decode(errors="replace").split("\r\n\r\n", 1)[-1])
except (OSError, ssl.SSLError) as e:
    print("refused", type(e).__name__)
' "$@"; }
echo "node fetch https: $(node_fetch https://allowed.test/node)"
echo "node fetch http: $(node_fetch http://allowed.test/node)"
echo "node get https: $(node_get https://allowed.test/node)"
echo "node get http: $(node_get http://allowed.test/node)"
echo "go https: $(` + "GOCLIENT" + ` -direct https://allowed.test/go)"
echo "go http: $(` + "GOCLIENT" + ` -direct http://allowed.test/go)"
echo "python tls: $(py_tls allowed.test 443 allowed.test)"
echo "curl https: $(curl -sS --noproxy '*' --max-time 10 https://allowed.test/curl 2>&1)"
echo "git clone: $(git -c http.proxy= clone -q https://git.test/repo.git r 2>&1 && git -C r log --format=%s)"
if [ -n "$JAVA_MAIN" ]; then
	echo "java https: $(java -Djavax.net.ssl.trustStore=$JAVA_TRUST -Djavax.net.ssl.trustStorePassword=changeit "$JAVA_MAIN" https://allowed.test/java 2>/dev/null)"
	echo "java http: $(java "$JAVA_MAIN" http://allowed.test/java 2>/dev/null)"
fi
echo "ip literal https: $(node_fetch https://WEBADDR/node)"
echo "ip literal http: $(curl -sS --noproxy '*' --max-time 10 http://WEBADDR/curl 2>&1)"
echo "denied name: $(py_tls DENIEDADDR 443 denied.test)"
echo "sni not the address's: $(py_tls DENIEDADDR 443 allowed.test)"
echo "denied sni at an allowed address: $(py_tls WEBADDR 443 denied.test)"
echo "rebinding name: $(py_tls WEBADDR 443 rebind.test)"
echo "private address: $(curl -sS --noproxy '*' --max-time 10 -H 'Host: hostaddr.test' http://HOSTADDR/curl 2>&1)"
`

// captureJava is a JVM client that sets no proxy (Java's HttpClient reads
// no proxy variable): it prints the body, or "refused" and why.
const captureJava = `import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

public class Main {
    public static void main(String[] a) throws Exception {
        HttpClient c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
        try {
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString());
            System.out.println(r.body());
        } catch (Exception e) {
            System.out.println("refused " + e);
        }
    }
}
`

// captureJVM writes Main.java and a trust store holding the world's CA
// into dir, and returns the variables the script reads; none when no JDK
// is installed (java and keytool).
func captureJVM(t *testing.T, w *world, dir string) []string {
	t.Helper()
	if _, err := exec.LookPath("keytool"); err != nil {
		t.Log("no JDK (keytool): the JVM client is skipped")
		return nil
	}
	src, trust := filepath.Join(dir, "Main.java"), filepath.Join(dir, "trust.p12")
	if err := os.WriteFile(src, []byte(captureJava), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("keytool", "-importcert", "-noprompt", "-alias", "world", "-file", w.caFile,
		"-keystore", trust, "-storepass", "changeit", "-storetype", "PKCS12").CombinedOutput(); err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	os.Chmod(trust, 0o644)
	return []string{"JAVA_MAIN=" + src, "JAVA_TRUST=" + trust}
}

// TestCapture: programs that ignore the proxy variables (and git told to
// ignore its own) reach allowed hosts through the sandbox's transparent
// capture, a JVM client too when a JDK is installed, over HTTPS (by the
// ClientHello's server name) and plain HTTP (by the Host header), as root
// and as uid 65534, with the proxy variables unset inside and with them
// set (Node and the -direct Go client read none anyway). Each refusal
// (an IP literal, a denied name, an SNI that is not the dialed address's
// name, a denied SNI at an allowed address, a name that rebinds to
// loopback, a private address) is the proxy's, audited with the address
// the client dialed and the reason the test names; the world's web server
// sees only the allowed host.
func TestCapture(t *testing.T) {
	testenv.NeedCommand(t, "node")
	testenv.NeedCommand(t, "python3")
	w := newWorld(t)
	script := strings.NewReplacer("GOCLIENT", goClientBin, "WEBADDR", webAddr, "DENIEDADDR", deniedAddr, "HOSTADDR", hostOwnAddr).Replace(captureScript)
	want := map[string]string{
		"node fetch https": "hello from allowed.test", "node fetch http": "hello from allowed.test",
		"node get https": "hello from allowed.test", "node get http": "hello from allowed.test",
		"go https": "200 hello from allowed.test", "go http": "200 hello from allowed.test",
		"python tls": "hello from allowed.test", "curl https": "hello from allowed.test", "git clone": "fake internet",
		"ip literal https": "refused", "ip literal http": "not in allowlist: " + webAddr,
		"denied name": "refused", "sni not the address's": "refused",
		"denied sni at an allowed address": "refused", "rebinding name": "refused",
		"private address": "private address: " + hostOwnAddr,
	}
	// The proxy's reasons, by the address the client dialed and the host
	// it named.
	reasons := []struct{ captured, host, reason string }{
		{webAddr + ":443", webAddr, "not in allowlist: " + webAddr},
		{webAddr + ":80", webAddr, "not in allowlist: " + webAddr},
		{deniedAddr + ":443", "denied.test", "not in allowlist: denied.test"},
		{deniedAddr + ":443", "allowed.test", "address is not the name's: " + deniedAddr + ":443 is not an address of allowed.test"},
		{webAddr + ":443", "denied.test", "not in allowlist: denied.test"},
		{webAddr + ":443", "rebind.test", "address is not the name's: " + webAddr + ":443 is not an address of rebind.test"},
		{hostOwnAddr + ":80", "hostaddr.test", "private address: " + hostOwnAddr},
	}
	unset := []string{"env", "-u", "HTTP_PROXY", "-u", "HTTPS_PROXY", "-u", "http_proxy", "-u", "https_proxy", "-u", "ALL_PROXY", "-u", "all_proxy",
		"-u", "JAVA_TOOL_OPTIONS"}
	for _, u := range users {
		for _, vars := range []string{"unset", "set"} {
			t.Run(u.name+"/proxy variables "+vars, func(t *testing.T) {
				argv := []string{"sh", "-c", script}
				if vars == "unset" {
					argv = append(append([]string{}, unset...), argv...)
				}
				dir := sharedDir(t)
				env := append([]string{"NODE_EXTRA_CA_CERTS=" + w.caFile}, captureJVM(t, w, dir)...)
				r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, argv: argv, flags: []string{"--allow-domain", "hostaddr.test"},
					extraEnv: env, timeout: 120e9})

				got := map[string]string{}
				for _, l := range strings.Split(r.stdout, "\n") {
					if k, v, ok := strings.Cut(l, ": "); ok {
						got[k] = v
					}
				}
				if len(env) > 1 {
					for _, k := range []string{"java https", "java http"} {
						if got[k] != "hello from allowed.test" {
							t.Errorf("%s: %q, want hello from allowed.test", k, got[k])
						}
					}
				}
				for k, v := range want {
					if !strings.HasPrefix(got[k], v) || strings.Contains(got[k], "hello from") != strings.HasPrefix(v, "hello from") && !strings.HasPrefix(v, "200") {
						t.Errorf("%s: %q, want %q", k, got[k], v)
					}
				}
				for _, want := range reasons {
					if !auditHas(r.audit, want.captured, want.host, want.reason) {
						t.Errorf("no proxy denial captured from %s for %s with reason %q in the audit:\n%s", want.captured, want.host, want.reason, r.audit)
					}
				}
				if t.Failed() {
					var proxyLines []string
					for _, l := range strings.Split(r.audit, "\n") {
						if strings.Contains(l, `"proxy decision"`) {
							proxyLines = append(proxyLines, l)
						}
					}
					t.Logf("stdout:\n%s\nstderr:\n%s\nthe proxy's lines:\n%s", r.stdout, r.stderr, strings.Join(proxyLines, "\n"))
				}
			})
		}
	}
	_, httpSeen, _, _ := w.seen()
	for _, h := range httpSeen {
		if !strings.HasPrefix(h, "allowed.test") && !strings.HasPrefix(h, "git.test") {
			t.Errorf("the world's web server saw %q", h)
		}
	}
}

// auditHas reports whether the audit holds a proxy denial of a captured
// connection from captured for host, with a reason starting with reason.
func auditHas(lines, captured, host, reason string) bool {
	for _, l := range strings.Split(lines, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m[audit.AttrCaptured] == captured && m[audit.AttrHost] == host && m[audit.AttrDecision] == "deny" &&
			strings.HasPrefix(m[audit.AttrReason].(string), reason) {
			return true
		}
	}
	return false
}

// TestCaptureLearnedNames: a connection whose first bytes name nothing (a
// client that waits for the server to speak, as ssh does) goes to the
// proxy by the name the sandbox's DNS answer gave for its address: to an
// allowed name's address it reaches the world's server (the proxy audits
// the name and the dialed address); to an address no answer gave it is the
// IP literal, refused; as root and as uid 65534.
func TestCaptureLearnedNames(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	w := newWorld(t)
	script := `
import socket, sys
def wait(addr):
    s = socket.create_connection(addr, timeout=15)
    print("closed", s.recv(100))
wait(socket.getaddrinfo("allowed.test", ` + udpEchoPort + `, socket.AF_INET, socket.SOCK_STREAM)[0][4])
wait(("` + deniedAddr + `", ` + udpEchoPort + `))
`
	// The answer read from the DNS forwarder over TCP names the address
	// too.
	overTCP := `addr=$(dig +tcp +short +tries=1 +time=5 allowed.test A | head -n1)
python3 -c 'import socket, sys; s = socket.create_connection((sys.argv[1], ` + udpEchoPort + `), timeout=15); print("closed", s.recv(100))' "$addr"`
	for _, u := range users {
		t.Run(u.name+"/over tcp", func(t *testing.T) {
			testenv.NeedCommand(t, "dig")
			_, _, before, _ := w.seen()
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", overTCP}})
			if _, _, after, _ := w.seen(); r.code != 0 || !strings.Contains(r.stdout, "closed b''") || after <= before {
				t.Fatalf("exit %d, the world saw %d new connections\nstdout %q\nstderr %q", r.code, after-before, r.stdout, r.stderr)
			}
		})
		t.Run(u.name, func(t *testing.T) {
			_, _, before, _ := w.seen()
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"python3", "-c", script}})
			if r.code != 0 || strings.Count(r.stdout, "closed b''") != 2 {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			if _, _, after, _ := w.seen(); after <= before {
				t.Errorf("the world's server at %s:%s saw no connection: the learned name did not take it there", webAddr, udpEchoPort)
			}
			var allowed, refused bool
			for _, l := range strings.Split(r.audit, "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) != nil || m[audit.AttrKind] != "connect" {
					continue
				}
				switch {
				case m[audit.AttrHost] == "allowed.test" && m[audit.AttrCaptured] == webAddr+":"+udpEchoPort && m[audit.AttrDecision] == "allow":
					allowed = true
				case m[audit.AttrHost] == deniedAddr && m[audit.AttrDecision] == "deny" && m[audit.AttrReason] == "not in allowlist: "+deniedAddr:
					refused = true
				}
			}
			if !allowed || !refused {
				t.Errorf("audit: the learned name allowed %v, the unnamed address refused %v:\n%s", allowed, refused, r.audit)
			}
		})
	}
}
