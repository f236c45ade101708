package shell

import (
	"strings"
	"sync"

	"github.com/barry-rocks/sandbox/policy"
)

// The DNS family: the lookup tools (dig, nslookup, host, drill, delv,
// kdig), resolvectl's query and getent's host databases.
func dnsPrograms() map[string]*program {
	return map[string]*program{
		"dig": dnsLookup, "nslookup": dnsLookup, "host": dnsLookup, "drill": dnsLookup, "delv": dnsLookup, "kdig": dnsLookup,

		// resolvectl and getent ask the system's resolver, whose servers no
		// word of the line names.
		"resolvectl": {actions: resolvectlActions, noHosts: true},
		"getent":     {actions: getentActions, noHosts: true},
	}
}

// dnsLookup is a DNS lookup tool: every invocation queries, and its host
// is the name it looks up.
var dnsLookup = &program{actions: dnsActions, hosts: dnsHosts}

func dnsActions(invocation) []string { return []string{policy.ActionDNS} }

// dnsOpts are the lookup tools' value-taking short options (dig -t TYPE,
// -p PORT, -q NAME...).
var dnsOpts = optSpec{short: "tcpqbfkxyW"}

// dnsHosts returns the first operand that is not a server (@SERVER), a
// query option (+short), a class or a record type (MX, AAAA).
func dnsHosts(inv invocation) []string {
	var h hostList
	for _, w := range operands(inv.args, dnsOpts) {
		v := w.val
		if w.dyn || strings.HasPrefix(v, "@") || strings.HasPrefix(v, "+") || isAlphaNum(v) && v == strings.ToUpper(v) || isRRType(v) {
			continue
		}
		h.url(v)
		break
	}
	return h
}

var rrTypes = sync.OnceValue(func() map[string]bool {
	return setOf(`a aaaa mx ns txt cname soa ptr srv caa any axfr ixfr ds dnskey https svcb in ch hs`)
})

func isRRType(s string) bool { return rrTypes()[strings.ToLower(s)] && s == strings.ToUpper(s) }

func isAlphaNum(s string) bool {
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// resolvectlActions: resolvectl query and resolve look names up.
func resolvectlActions(inv invocation) []string {
	args := inv.args
	sub := ""
	if len(inv.chain) > 0 {
		sub = inv.chain[0]
	}
	if sub == "query" || sub == "resolve" || sub == "" && len(args) > 1 && (args[1].val == "query" || args[1].val == "resolve") {
		return []string{policy.ActionDNS}
	}
	return nil
}

// getentActions: getent hosts, ahosts, ahostsv4... resolve names.
func getentActions(inv invocation) []string {
	if len(inv.args) > 1 && strings.Contains(inv.args[1].val, "hosts") {
		return []string{policy.ActionDNS}
	}
	return nil
}
