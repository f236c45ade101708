package kube

// The contract between the manifests and the runtime half (sandboxd
// netinit and sandboxd proxy --sidecar): every port, path, uid and name a
// rendered pod carries. Changing one changes what running pods expect.
const (
	// ProxyUID is the uid (and gid) of the barry-proxy sidecar: a constant,
	// never the agent's, so the agent uid's rules never match the proxy's
	// own connections out. An agent uid equal to it is refused.
	ProxyUID int64 = 1337
	// DefaultAgentUID is the agent container's uid (and gid) when none is
	// given.
	DefaultAgentUID int64 = 1000

	// CapturePort is where netinit redirects the agent's TCP, and where the
	// sidecar's capture listens (127.0.0.1).
	CapturePort = 15001
	// DNSPort is where netinit redirects the agent's DNS (UDP and TCP port
	// 53 of any address), and where the sidecar's DNS proxy listens
	// (127.0.0.1).
	DNSPort = 15053
	// HealthPort is the sidecar's health server, on every address (the
	// kubelet's probes come to the pod's IP): /readyz and /livez.
	HealthPort = 15021
	// ReadyPath and LivePath are the health server's paths.
	ReadyPath = "/readyz"
	LivePath  = "/livez"

	// NetinitName and ProxyName are the two containers the manifests add.
	NetinitName = "barry-netinit"
	ProxyName   = "barry-proxy"
	// AgentName is the agent container's name in a rendered workload.
	AgentName = "agent"

	// PolicyDir is where the policy ConfigMap is mounted in the sidecar;
	// PolicyKey is its one key, so the policy file is PolicyDir/PolicyKey.
	// The kubelet swaps the mount's ..data symlink on an update.
	PolicyDir = "/etc/barry/policy"
	PolicyKey = "policy.yaml"
	// RunDir is the emptyDir shared by the sidecar (read-write) and the
	// agent (read-only); HookSocket in it is the hook ruling server.
	RunDir     = "/run/barry"
	HookSocket = RunDir + "/hooks.sock"
	// ProxyRuntimeDir is the sidecar's own emptyDir, which no other
	// container mounts: its runtime directory (the proxies' sockets, the
	// status file sandboxd status reads) and temporary files, as
	// XDG_RUNTIME_DIR and TMPDIR. Its /tmp is the agent's, read-only.
	ProxyRuntimeDir = "/run/barry-proxy"
	// CredentialDir is where the credential Secret is mounted, in the
	// sidecar only: a credential's value is its key there (the policy's
	// file CredentialDir/KEY, or the key named as its variable).
	CredentialDir = "/etc/barry/credentials"
	// PlaceholderDir holds, in RunDir, a file per credential variable
	// with its placeholder (written by the sidecar once it has read the
	// value: a placeholder has the value's length); the agent's command
	// is wrapped to read them into its environment (PlaceholderWrapper).
	PlaceholderDir = RunDir + "/placeholders"
	// TrustBundle and TrustStore are the trust the sidecar writes for the
	// agent when the policy names credentials: the roots the sidecar
	// trusts and the sandbox CA with which it terminates TLS for the
	// credentials' hosts, as a PEM bundle (the agent's SSL_CERT_FILE,
	// NODE_EXTRA_CA_CERTS, ...) and a JKS truststore (JAVA_TOOL_OPTIONS).
	TrustDir    = RunDir + "/trust"
	TrustBundle = TrustDir + "/ca-bundle.pem"
	TrustStore  = TrustDir + "/truststore.jks"
	// PlaceholderShell is the shell that runs the wrapper.
	PlaceholderShell = "/bin/sh"

	// AgentHome and WorkspaceDir are the agent's HOME and working
	// directory, each a writable volume under a read-only root.
	AgentHome    = "/home/agent"
	WorkspaceDir = "/workspace"

	// SessionLabel selects a session's pods (the NetworkPolicy's selector);
	// its value is the session's name.
	SessionLabel = "barry.rocks/session"
	// AllowedDomainsAnnotation lists, on the NetworkPolicy, the policy's
	// allowDomains (comma-separated): what a CNI with FQDN policies can
	// narrow the 443/80 rule to.
	AllowedDomainsAnnotation = "barry.rocks/allowed-domains"
	// EgressNoteAnnotation says why the NetworkPolicy's egress is wide.
	EgressNoteAnnotation = "barry.rocks/egress-note"
)

// The volumes the manifests add, by name.
const (
	volPolicy      = "barry-policy"
	volRun         = "barry-run"
	volCredentials = "barry-credentials"
	volHome        = "barry-home"
	volTmp         = "barry-tmp"
	volProxyTmp    = "barry-proxy-tmp"
	volWorkspace   = "workspace"
)

// The sidecar's environment: the pod's identity from the downward API, for
// the audit's fleet fields.
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvPodUID       = "POD_UID"
	// EnvSession is the session's name (the pod's SessionLabel).
	EnvSession = "BARRY_SESSION"
)
