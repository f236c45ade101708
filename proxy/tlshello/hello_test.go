package tlshello

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// clientHello captures the first flight of a real crypto/tls client.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: serverName == ""})
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Handshake()
	}()
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// splitRecords re-frames a one-record ClientHello into records of at most
// size handshake bytes each.
func splitRecords(rec []byte, size int) []byte {
	hs := rec[5:]
	var out []byte
	for len(hs) > 0 {
		n := min(size, len(hs))
		h := []byte{0x16, rec[1], rec[2], 0, 0}
		binary.BigEndian.PutUint16(h[3:], uint16(n))
		out = append(out, h...)
		out = append(out, hs[:n]...)
		hs = hs[n:]
	}
	return out
}

// withExtension appends an extension of type typ (4 bytes of data) to a
// one-record ClientHello, fixing the three lengths that cover it.
func withExtension(t testing.TB, rec []byte, typ uint16) []byte {
	t.Helper()
	out := append([]byte(nil), rec...)
	off := 5 + 4 + 2 + 32
	off += 1 + int(out[off])                                   // session id
	off += 2 + int(binary.BigEndian.Uint16(out[off:]))         // cipher suites
	off += 1 + int(out[off])                                   // compression
	ext := []byte{byte(typ >> 8), byte(typ), 0, 4, 1, 2, 3, 4} // type, length, data
	binary.BigEndian.PutUint16(out[off:], binary.BigEndian.Uint16(out[off:])+uint16(len(ext)))
	binary.BigEndian.PutUint16(out[3:], binary.BigEndian.Uint16(out[3:])+uint16(len(ext)))
	hl := int(out[6])<<16 | int(out[7])<<8 | int(out[8]) + len(ext)
	out[6], out[7], out[8] = byte(hl>>16), byte(hl>>8), byte(hl)
	if 5+int(binary.BigEndian.Uint16(out[3:])) != len(out)+len(ext) {
		t.Fatal("withExtension: not a one-record ClientHello")
	}
	return append(out, ext...)
}

func TestParseClientHello(t *testing.T) {
	withSNI := clientHello(t, "api.example.com")
	noSNI := clientHello(t, "")
	ipSNI := clientHello(t, "203.0.113.9") // Go sends no SNI for an IP
	cases := []struct {
		name  string
		in    []byte
		state State
		sni   string
	}{
		{"real hello", withSNI, SNI, "api.example.com"},
		{"split over records", splitRecords(withSNI, 50), SNI, "api.example.com"},
		{"split into 1-byte records", splitRecords(withSNI, 1), SNI, "api.example.com"},
		{"no sni", noSNI, NoSNI, ""},
		{"ip server name", ipSNI, NoSNI, ""},
		{"ssh banner", []byte("SSH-2.0-OpenSSH_9.6\r\n"), NotTLS, ""},
		{"http", []byte("GET / HTTP/1.1\r\n"), NotTLS, ""},
		{"alert record first", []byte{0x15, 3, 3, 0, 2, 2, 40}, OtherRecord, ""},
		{"alert record then a hello", append([]byte{0x15, 3, 1, 0, 2, 1, 90}, withSNI...), OtherRecord, ""},
		{"change cipher spec first", []byte{0x14, 3, 3, 0, 1, 1}, OtherRecord, ""},
		{"application data first", []byte{0x17, 3, 3, 0, 1, 0}, OtherRecord, ""},
		{"heartbeat first", []byte{0x18, 3, 3, 0, 1, 0}, OtherRecord, ""},
		{"alert type byte alone", []byte{0x15}, NeedMore, ""},
		{"record-type byte, not TLS", []byte{0x15, 'x', 'y'}, NotTLS, ""},
		{"byte below the record types", []byte{0x13, 3, 3}, NotTLS, ""},
		{"bad version", []byte{0x16, 2, 0, 0, 1, 1}, Malformed, ""},
		{"zero-length record", []byte{0x16, 3, 1, 0, 0}, Malformed, ""},
		{"server hello", []byte{0x16, 3, 3, 0, 4, 2, 0, 0, 0}, Malformed, ""},
		{"truncated body", append([]byte{0x16, 3, 1, 0, 6, 1, 0, 0, 2}, 3, 3), Malformed, ""},
		{"empty", nil, NeedMore, ""},
		{"encrypted_client_hello", withExtension(t, withSNI, 0xfe0d), ECH, ""},
		{"draft esni", withExtension(t, withSNI, 0xffce), ECH, ""},
		{"encrypted_client_hello, no sni", withExtension(t, noSNI, 0xfe0d), ECH, ""},
		{"other extension appended", withExtension(t, withSNI, 0xfe0c), SNI, "api.example.com"},
	}
	for _, tc := range cases {
		st, sni := Parse(tc.in)
		if st != tc.state || sni != tc.sni {
			t.Errorf("%s: got %d %q, want %d %q", tc.name, st, sni, tc.state, tc.sni)
		}
	}
	// Every strict prefix of a TLS hello needs more bytes.
	for _, in := range [][]byte{withSNI, splitRecords(withSNI, 100)} {
		for i := 1; i < len(in); i++ {
			if st, _ := Parse(in[:i]); st != NeedMore {
				t.Fatalf("prefix %d/%d: state %d, want need-more", i, len(in), st)
			}
		}
	}
}

func FuzzParseClientHello(f *testing.F) {
	f.Add(clientHello(f, "api.example.com"))
	f.Add(splitRecords(clientHello(f, "a.test"), 7))
	f.Add(clientHello(f, ""))
	f.Add([]byte("SSH-2.0-x\r\n"))
	f.Add([]byte{0x16, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3})
	f.Add(withExtension(f, clientHello(f, "a.test"), 0xfe0d))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, sni := Parse(b)
		// Property: a decision made on b stands when more bytes follow.
		if st != NeedMore {
			st2, sni2 := Parse(append(b[:len(b):len(b)], 0x16, 3, 1))
			if st2 != st || sni2 != sni {
				t.Fatalf("decision changed with trailing bytes: %d %q -> %d %q", st, sni, st2, sni2)
			}
		}
		if st != SNI && sni != "" {
			t.Fatalf("sni %q with state %d", sni, st)
		}
	})
}
