package dispatch

import "net/netip"

// Prefixes of IPv6 addresses that carry an IPv4 address a network may
// route to: NAT64's well-known prefix (64:ff9b::/96, RFC 6052) and its
// local-use prefix (64:ff9b:1::/48, RFC 8215; the IPv4 address is the last
// 32 bits of both), and 6to4 (2002::/16, RFC 3056; the IPv4 address is
// bits 16 to 48).
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixTo4     = netip.MustParsePrefix("2002::/16")
)

// refusedAddr reports whether ip is an address the HTTP deliverer never
// dials: loopback, link-local, multicast, unspecified, AWS's IPv6
// metadata address, or any of these written as the IPv4 address inside a
// NAT64 or 6to4 address (64:ff9b::a9fe:a9fe is 169.254.169.254 through a
// NAT64 gateway).
func refusedAddr(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip == awsMetadataV6 {
		return true
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip), nat64Local.Contains(ip):
			return refusedAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixTo4.Contains(ip):
			return refusedAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	return false
}
