package policy

import (
	"slices"
)

// PolicyFileVersion is the only policy file version this build reads.
const PolicyFileVersion = 1

// PolicyFile is a session policy document: the harness, the packed bags, the
// tool catalog, extra traits and named bounds, the identity, and the
// session's own selections. It is decoded strictly by LoadFile/DecodePolicyFile.
type PolicyFile struct {
	Version  int
	Harness  string
	Mode     string
	Bags     map[string]*Bag
	Tools    []ToolMeta
	Traits   map[string]*AgentTrait
	Bounds   map[string]*Bound
	Identity *Identity
	Session  *SessionSelection
	// Filesystem is the sandbox's filesystem section (outside the SDK's
	// Bound, which keeps its wire format): nil when absent.
	Filesystem *FilesystemSection
	// Environment is the sandbox's environment section (outside the
	// SDK's Bound): nil when absent.
	Environment *EnvironmentSection
	// Credentials are the secrets the sandbox gets only as placeholders
	// (outside the SDK's Bound): nil when absent.
	Credentials []CredentialSpec
	// Sandbox is what the sandbox itself must be (outside the SDK's
	// Bound): nil when absent.
	Sandbox *SandboxSection
}

// Bag is a packed bag: what it provides, and the traits it defines.
type Bag struct {
	Namespaces []string
	Skills     []string
	Services   []string
	Actions    []string
	// Bags are the bags this one lists; its automatic trait grants their
	// namespaces too.
	Bags []string
	// Extends names a bag this one extends; such a bag gets no automatic
	// trait.
	Extends string
	// Traits are defined by the bag. One named like the bag replaces the
	// automatic <bag> trait, one named "read" replaces <bag>:read; others
	// are known as <bag>:<name>.
	Traits map[string]*AgentTrait
}

// Identity is who the session runs as.
type Identity struct {
	Name   string
	Bags   []string
	Traits []string
	Bounds []string
	// Optional are base default traits this identity turns off.
	Optional []string
	// Bound is the identity's inline bound.
	Bound *Bound
	// BagGrant is "session" (default: packed bags reach a session only when
	// a trait selects them) or "identity" (every packed root bag's automatic
	// trait joins every session).
	BagGrant string
}

// SessionSelection is what the session selects at start.
type SessionSelection struct {
	Traits []string
	Bounds []string
	Bound  *Bound
}

// BaseDefaultTraits are the base identity's traits, in the bounds SDK's order.
var BaseDefaultTraits = []string{"artifacts", "bash", "filesystem", "instructions", "sessions"}

// BuiltinTraits returns the traits every installation has: the base
// defaults, and "web", which grants the harnesses' native network tools.
// Each call returns fresh values.
func BuiltinTraits() map[string]*AgentTrait {
	all := func(c ...string) map[string][]string {
		m := map[string][]string{}
		for _, id := range harnessIDs() {
			m[id] = slices.Clone(c)
		}
		return m
	}
	return map[string]*AgentTrait{
		"artifacts":    {Name: "artifacts", Access: AccessReadWrite, Namespaces: []string{"artifacts"}},
		"bash":         {Name: "bash", Access: AccessReadWrite, Namespaces: []string{BashNamespace}, NativeTools: all(CategoryShell)},
		"filesystem":   {Name: "filesystem", Access: AccessReadWrite, Namespaces: []string{"filesystem"}, NativeTools: all(CategoryFileReads, CategoryFileWrites)},
		"instructions": {Name: "instructions", Access: AccessRead, Namespaces: []string{"instructions"}},
		"sessions":     {Name: "sessions", Access: AccessReadWrite, Namespaces: []string{"sessions"}},
		"web":          {Name: "web", Access: AccessRead, Namespaces: []string{}, NativeTools: all(CategoryNetwork)},
	}
}

// BuiltinBounds returns the named bounds base ships. They are optional:
// they apply only when something selects them.
func BuiltinBounds() map[string]*Bound {
	return map[string]*Bound{
		"readonly": {
			Name:         "readonly",
			Description:  "denies the Bash, Write and Edit tools, write access, and network writes",
			DeniedTools:  []string{"Bash", "Edit", "Write"},
			DeniedAccess: []string{"write"},
			Network:      &NetworkRules{Actions: []string{ActionWrite}},
		},
		"no-network": {
			Name:        "no-network",
			Description: "denies all network actions",
			Network:     &NetworkRules{Actions: []string{ActionAll}},
		},
		"no-network-write": {
			Name:        "no-network-write",
			Description: "denies network writes",
			Network:     &NetworkRules{Actions: []string{ActionWrite}},
		},
	}
}
