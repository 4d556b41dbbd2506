package clientaddr

import "testing"

func TestKey(t *testing.T) {
	for _, c := range []struct{ remote, want string }{
		{"192.0.2.7:5000", "192.0.2.7/32"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7/32"},
		{"[2001:db8:1:2:aaaa::1]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9]:6000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:5000", "2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:5000", "fe80::/64"},
		{"@", "invalid Prefix"},
	} {
		if got := Key(c.remote).String(); got != c.want {
			t.Errorf("Key(%q) = %s, want %s", c.remote, got, c.want)
		}
	}
}
