// Package tlshello reads the server name from the start of a TLS client's
// first flight (the ClientHello's SNI), for the proxy's SNI check and
// sandboxd's capture, without any TLS machinery.
package tlshello

import (
	"encoding/binary"
	"errors"
)

// State is what the first flight of a tunnel turned out to be.
type State uint8

const (
	NeedMore    State = iota // not enough bytes yet
	NotTLS                   // first byte is not a TLS handshake record
	SNI                      // a ClientHello with a server name
	NoSNI                    // a ClientHello without server name
	Malformed                // a handshake record that is not a valid ClientHello
	OtherRecord              // a TLS record of another type (alert, …) before any ClientHello
	ECH                      // a ClientHello with encrypted_client_hello (or draft ESNI): the real name is hidden
)

// Extensions that hide the server name the server will act on behind an
// encrypted inner ClientHello: a client-facing server that decrypts it
// serves the inner name, whatever the outer SNI says.
const (
	extEncryptedClientHello = 0xfe0d // draft-ietf-tls-esni-13 and later
	extEncryptedServerName  = 0xffce // draft-ietf-tls-esni-00..02 (ESNI)
)

// MaxBytes bounds how much of the client's first flight is held for the
// SNI check. Real ClientHellos (even with post-quantum key shares) are under
// 4 KiB; 64 KiB leaves room for padding extensions.
const MaxBytes = 64 << 10

var errHello = errors.New("malformed ClientHello")

// Parse reads the TLS records at the start of buf and, once a
// whole ClientHello is there, returns its server name. It handles a
// ClientHello split over several records and records split over reads.
func Parse(buf []byte) (State, string) {
	if len(buf) == 0 {
		return NeedMore, ""
	}
	if buf[0] != 0x16 {
		// Any other TLS record first (change_cipher_spec, alert,
		// application_data, heartbeat: types 20-24, version 3.x) is
		// refused, not passed as "not TLS": a TLS server that skips a
		// warning alert would then read a ClientHello nobody checked.
		if buf[0] < 0x14 || buf[0] > 0x18 {
			return NotTLS, ""
		}
		if len(buf) < 2 {
			return NeedMore, ""
		}
		if buf[1] == 3 {
			return OtherRecord, ""
		}
		return NotTLS, ""
	}
	var hs []byte // handshake bytes gathered from consecutive records
	for off := 0; ; {
		if len(buf)-off < 5 {
			return NeedMore, ""
		}
		if buf[off] != 0x16 || buf[off+1] != 3 {
			return Malformed, ""
		}
		n := int(binary.BigEndian.Uint16(buf[off+3:]))
		if n == 0 || n > 1<<14+2048 {
			return Malformed, ""
		}
		if len(buf)-off-5 < n {
			return NeedMore, ""
		}
		hs = append(hs, buf[off+5:off+5+n]...)
		off += 5 + n
		if len(hs) >= 4 {
			if hs[0] != 1 { // client_hello
				return Malformed, ""
			}
			total := 4 + (int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3]))
			if total > MaxBytes {
				return Malformed, ""
			}
			if len(hs) >= total {
				sni, found, ech, err := helloServerName(hs[4:total])
				switch {
				case err != nil:
					return Malformed, ""
				case ech:
					return ECH, ""
				case !found:
					return NoSNI, ""
				default:
					return SNI, sni
				}
			}
		}
	}
}

// helloServerName extracts the host_name of the server_name extension from
// a ClientHello body, and reports whether the hello carries an encrypted
// inner hello (ECH or ESNI).
func helloServerName(b []byte) (string, bool, bool, error) {
	r := reader(b)
	if !r.skip(2 + 32) { // legacy_version, random
		return "", false, false, errHello
	}
	if !r.skipVec8() || !r.skipVec16() || !r.skipVec8() { // session id, cipher suites, compression
		return "", false, false, errHello
	}
	if len(r) == 0 {
		return "", false, false, nil // no extensions
	}
	ext, ok := r.vec16()
	if !ok || len(r) != 0 {
		return "", false, false, errHello
	}
	var name string
	var found, ech bool
	for len(ext) > 0 {
		typ, ok1 := ext.u16()
		data, ok2 := ext.vec16()
		if !ok1 || !ok2 {
			return "", false, false, errHello
		}
		if typ == extEncryptedClientHello || typ == extEncryptedServerName {
			ech = true
		}
		if typ != 0 { // server_name
			continue
		}
		if found {
			return "", false, false, errHello // duplicate extension
		}
		list, ok := data.vec16()
		if !ok || len(data) != 0 {
			return "", false, false, errHello
		}
		for len(list) > 0 {
			if len(list) < 1 {
				return "", false, false, errHello
			}
			nt := list[0]
			list = list[1:]
			v, ok := list.vec16()
			if !ok {
				return "", false, false, errHello
			}
			if nt == 0 {
				if found || len(v) == 0 {
					return "", false, false, errHello // two host names is ambiguous
				}
				name, found = string(v), true
			}
		}
		if !found {
			return "", false, false, errHello
		}
	}
	return name, found, ech, nil
}

type reader []byte

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*r)
	*r = (*r)[2:]
	return v, true
}

func (r *reader) vec16() (reader, bool) {
	n, ok := r.u16()
	if !ok || len(*r) < int(n) {
		return nil, false
	}
	v := (*r)[:n]
	*r = (*r)[n:]
	return v, true
}

func (r *reader) skipVec16() bool { _, ok := r.vec16(); return ok }

func (r *reader) skipVec8() bool {
	if len(*r) < 1 {
		return false
	}
	n := int((*r)[0])
	return r.skip(1) && r.skip(n)
}
