package procjail

import "testing"

// TestUIDRulesValidate: the first field that cannot be installed is named,
// in the documented order; a usable set passes.
func TestUIDRulesValidate(t *testing.T) {
	ok := UIDRules{UID: 1000, CapturePort: 3130, DNSPort: 5353, LoopbackTCP: []uint16{3128}}
	for _, c := range []struct {
		name string
		edit func(*UIDRules)
		want string
	}{
		{"usable", func(*UIDRules) {}, ""},
		{"no loopback ports", func(r *UIDRules) { r.LoopbackTCP = nil }, ""},
		{"root", func(r *UIDRules) { r.UID = 0; r.CapturePort = 0 }, "uid 0 cannot be confined (root could remove the rules, and sandboxd's own sockets would match)"},
		{"uid -1", func(r *UIDRules) { r.UID = ^uint32(0) }, "uid 4294967295 is no uid"},
		{"no capture port", func(r *UIDRules) { r.CapturePort = 0; r.DNSPort = 0 }, "capture port 0"},
		{"no dns port", func(r *UIDRules) { r.DNSPort = 0 }, "dns port 0"},
		{"one port for both", func(r *UIDRules) { r.DNSPort = r.CapturePort }, "dns port 3130 is the capture port"},
		{"loopback port 0", func(r *UIDRules) { r.LoopbackTCP = []uint16{3128, 0} }, "loopbackTCP[1]: port 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			r.LoopbackTCP = append([]uint16(nil), ok.LoopbackTCP...)
			c.edit(&r)
			got := ""
			if err := r.Validate(); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("Validate() = %q, want %q", got, c.want)
			}
		})
	}
	if got := uidTable(1900000001); got != "barry_uid_1900000001" {
		t.Errorf("uidTable = %q", got)
	}
}
