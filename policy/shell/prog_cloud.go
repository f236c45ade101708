package shell

// The cloud family: the cloud providers' and platforms' CLIs, Kubernetes'
// (kubectl, oc, helm) and the object-storage clients. They talk to
// endpoints the line does not name, so each performs every leaf action.
func cloudPrograms() map[string]*program {
	return map[string]*program{
		"aws": {globals: &optSpec{long: []string{"profile", "region", "output", "endpoint-url", "query", "ca-bundle", "cli-read-timeout", "cli-connect-timeout", "color"}},
			actions: everyAction, noHosts: true},
		"gcloud": {globals: &optSpec{long: []string{"project", "account", "configuration", "format", "verbosity", "impersonate-service-account", "billing-project", "flags-file"}},
			actions: everyAction, noHosts: true},
		"az": {globals: &optSpec{long: []string{"subscription", "output", "query"}}, actions: everyAction, noHosts: true},
		"kubectl": {globals: &optSpec{short: "ns", long: []string{"namespace", "context", "kubeconfig", "cluster", "user", "server", "token", "as", "as-group", "request-timeout", "certificate-authority", "client-certificate", "client-key"}},
			runs: map[string]int{"exec": -1, "run": -1, "debug": -1}, actions: everyAction, noHosts: true},
		// helm's chart and repository URLs are read as a package manager's.
		"helm": {globals: &optSpec{short: "n", long: []string{"namespace", "kube-context", "kubeconfig", "repository-config", "registry-config"}},
			actions: everyAction, hosts: pkgURLHosts},

		"oc": cloudCLI, "doctl": cloudCLI, "flyctl": cloudCLI, "heroku": cloudCLI, "vercel": cloudCLI, "netlify": cloudCLI, "wrangler": cloudCLI,
		"rclone": cloudCLI, "s3cmd": cloudCLI, "gsutil": cloudCLI,
	}
}

// cloudCLI is a cloud CLI read generically (no subcommand chain).
var cloudCLI = &program{actions: everyAction, noHosts: true}
