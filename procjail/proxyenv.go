package procjail

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// ProxyEnvArgs says where the proxy forwarder listens inside the sandbox and
// which per-sandbox credentials it requires.
type ProxyEnvArgs struct {
	// Port is the forwarder's port on 127.0.0.1 inside the sandbox.
	Port uint16
	// User and Password are the per-sandbox proxy credentials (Basic).
	User, Password string
	// ConnectHelper is the absolute path of a program that, run as
	// "ConnectHelper __connect HOST PORT", tunnels stdin/stdout through the
	// proxy with CONNECT (sandboxd itself). Empty leaves GIT_SSH_COMMAND
	// unset.
	ConnectHelper string
}

// proxyVarNames are the variables ProxyEnv owns: they are removed from the
// base environment whatever their case, then set.
var proxyVarNames = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "RSYNC_PROXY", "GRPC_PROXY",
	"NPM_CONFIG_PROXY", "NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_NOPROXY", "PIP_PROXY", "GIT_SSH_COMMAND",
	"JAVA_TOOL_OPTIONS", "DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY", "DOCKER_NO_PROXY",
	"CLOUDSDK_PROXY_TYPE", "CLOUDSDK_PROXY_ADDRESS", "CLOUDSDK_PROXY_PORT", "CLOUDSDK_PROXY_USERNAME",
	"CLOUDSDK_PROXY_PASSWORD", "CLOUDSDK_PROXY_RDNS",
}

// noProxy is what bypasses the proxy: only the sandbox's own loopback,
// which reaches nothing outside.
const noProxy = "localhost,127.0.0.1,::1"

// ProxyEnv returns base with every proxy variable (in any case) replaced by
// ones that point at the sandbox's proxy forwarder with the per-sandbox
// credentials, in the forms tools expect. The result is sorted by name.
func ProxyEnv(base []string, a ProxyEnvArgs) []string {
	hostPort := "127.0.0.1:" + strconv.Itoa(int(a.Port))
	u := &url.URL{Scheme: "http", Host: hostPort}
	if a.User != "" || a.Password != "" {
		u.User = url.UserPassword(a.User, a.Password)
	}
	proxyURL := u.String()
	set := map[string]string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY", "GRPC_PROXY"} {
		set[k] = proxyURL
		set[strings.ToLower(k)] = proxyURL
	}
	set["NO_PROXY"], set["no_proxy"] = noProxy, noProxy
	set["RSYNC_PROXY"] = hostPort
	set["npm_config_proxy"] = proxyURL
	set["npm_config_https_proxy"] = proxyURL
	set["npm_config_noproxy"] = noProxy
	set["PIP_PROXY"] = proxyURL
	set["DOCKER_HTTP_PROXY"] = proxyURL
	set["DOCKER_HTTPS_PROXY"] = proxyURL
	set["DOCKER_NO_PROXY"] = noProxy
	set["CLOUDSDK_PROXY_TYPE"] = "http"
	set["CLOUDSDK_PROXY_ADDRESS"] = "127.0.0.1"
	set["CLOUDSDK_PROXY_PORT"] = strconv.Itoa(int(a.Port))
	set["CLOUDSDK_PROXY_USERNAME"] = a.User
	set["CLOUDSDK_PROXY_PASSWORD"] = a.Password
	java := []string{
		"-Dhttp.proxyHost=127.0.0.1", "-Dhttp.proxyPort=" + strconv.Itoa(int(a.Port)),
		"-Dhttps.proxyHost=127.0.0.1", "-Dhttps.proxyPort=" + strconv.Itoa(int(a.Port)),
		"-Dhttp.nonProxyHosts=localhost|127.0.0.1", "-Djava.net.preferIPv4Stack=true",
	}
	if a.User != "" {
		java = append(java, "-Dhttp.proxyUser="+a.User, "-Dhttp.proxyPassword="+a.Password,
			"-Dhttps.proxyUser="+a.User, "-Dhttps.proxyPassword="+a.Password,
			"-Djdk.http.auth.tunneling.disabledSchemes=")
	}
	set["JAVA_TOOL_OPTIONS"] = strings.Join(java, " ")
	if a.ConnectHelper != "" {
		set["GIT_SSH_COMMAND"] = fmt.Sprintf("ssh -o ProxyCommand='%s __connect %%h %%p'", shellQuoteInner(a.ConnectHelper))
	}

	owned := map[string]bool{}
	for _, k := range proxyVarNames {
		owned[k] = true
	}
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if owned[strings.ToUpper(k)] {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// shellQuoteInner escapes a path for use inside single quotes.
func shellQuoteInner(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// BasicProxyAuth is the Proxy-Authorization value of user and password, for
// Forward.Authorization.
func BasicProxyAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}
