package shell

// The other-protocol family: clients of protocols the classifier does not
// read (FTP, TFTP, gopher and the text browsers, whois, ICMP and the
// probes, busybox's ssl_client, the download accelerators) and openssl's
// TLS client.
func protoPrograms() map[string]*program {
	return map[string]*program{
		"ftp": anyProtocol, "tftp": anyProtocol, "lftp": anyProtocol, "ftpget": anyProtocol, "ftpput": anyProtocol,
		"ssl_client": anyProtocol, "aria2c": anyProtocol, "axel": anyProtocol,
		"lynx": anyProtocol, "links": anyProtocol, "elinks": anyProtocol, "w3m": anyProtocol, "whois": anyProtocol,
		"ping": anyProtocol, "ping6": anyProtocol, "fping": anyProtocol, "arping": anyProtocol,
		"traceroute": anyProtocol, "traceroute6": anyProtocol, "tracepath": anyProtocol, "mtr": anyProtocol,
		"nmap": anyProtocol, "hping3": anyProtocol,

		"openssl": {actions: opensslActions, hosts: opensslHosts},
	}
}

// anyProtocol is a client whose protocol and destination the classifier
// does not read: every leaf action, and no host it can name.
var anyProtocol = &program{actions: everyAction, noHosts: true}

// opensslActions: openssl s_client and s_time open a raw TLS socket (as
// may a subcommand that is not static).
func opensslActions(inv invocation) []string {
	if args := inv.args; len(args) > 1 && (args[1].dyn || args[1].val == "s_client" || args[1].val == "s_time") {
		return allLeafActions
	}
	return nil
}

// opensslHosts returns the hosts of -connect HOST:PORT.
func opensslHosts(inv invocation) []string {
	var h hostList
	args := inv.args
	for j := 2; j+1 < len(args); j++ {
		if args[j].val == "-connect" && !args[j+1].dyn {
			h.url(args[j+1].val)
		}
	}
	return h
}
