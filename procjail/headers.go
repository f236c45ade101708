package procjail

// What the init tells the proxy and the DNS proxy (Linux). The proxy
// imports nothing of procjail: its constants of the same names must agree
// (a test in internal/supervisor checks they do).
const (
	// CaptureHeader is the proxy's OriginalDestinationHeader: the
	// address a captured connection's client dialed.
	CaptureHeader = "X-Barry-Original-Destination"
	// PeerHeader carries "pid=PID argv=JSON", the process inside behind a
	// connection (the proxy's PeerHeader).
	PeerHeader = "X-Barry-Peer"
	// PeerFrame starts the frame that names, to the DNS proxy, the
	// process behind the queries that follow: a DNS-over-TCP frame
	// (two-byte length) holding PeerFrame and the peer value (no DNS
	// message starts so: its opcode would be 10), the connection's first
	// (the proxy's PeerFrame).
	PeerFrame = "BARRY-PEER "
)
