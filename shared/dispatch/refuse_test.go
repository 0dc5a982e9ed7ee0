package dispatch

import (
	"net/netip"
	"testing"
)

func TestRefusedAddressesIncludeTheirNAT64And6to4Forms(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "169.254.169.254": true, "::1": true, "fd00:ec2::254": true, "0.0.0.0": true,
		"64:ff9b::a9fe:a9fe":   true,  // 169.254.169.254 through NAT64
		"64:ff9b::7f00:1":      true,  // 127.0.0.1
		"64:ff9b:1::a9fe:a9fe": true,  // through a local-use NAT64 prefix
		"2002:a9fe:a9fe::1":    true,  // 6to4 of 169.254.169.254
		"2002:7f00:1::":        true,  // 6to4 of 127.0.0.1
		"64:ff9b::5db8:d822":   false, // 93.184.216.34, a public address
		"2002:5db8:d822::1":    false,
		"10.0.0.5":             false, // private addresses are allowed (a VPC)
		"2001:db8::1":          false,
	} {
		if got := refusedAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("refusedAddr(%s) = %v, want %v", addr, got, want)
		}
		if err := refuseLocal("tcp", netip.AddrPortFrom(netip.MustParseAddr(addr), 443).String(), nil); (err != nil) != want {
			t.Errorf("refuseLocal(%s) = %v, want refused %v", addr, err, want)
		}
	}
}
