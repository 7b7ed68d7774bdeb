package testvm

import (
	"slices"
	"testing"
)

// TestRouteOptions: what the site's DHCP server is told to hand out. The default route goes into
// the classless list whenever that list is sent, because a client given one ignores the router
// option (RFC 3442) and would lose its default route, and with it the interface Kubernetes'
// network plugin finds by it.
func TestRouteOptions(t *testing.T) {
	tests := []struct {
		name    string
		gateway bool
		routes  []string
		want    []string
	}{
		{"no gateway, no routes", false, nil,
			[]string{"--dhcp-option=option:router"}},
		{"gateway only", true, nil,
			[]string{"--dhcp-option=option:router,10.9.0.2"}},
		{"routes only", false, []string{"10.8.0.0/24,10.9.0.3"},
			[]string{"--dhcp-option=option:router", "--dhcp-option=option:classless-static-route,10.8.0.0/24,10.9.0.3"}},
		{"gateway and routes", true, []string{"10.8.0.0/24,10.9.0.3", "10.7.0.0/16,10.9.0.4"},
			[]string{"--dhcp-option=option:router,10.9.0.2",
				"--dhcp-option=option:classless-static-route,10.8.0.0/24,10.9.0.3,10.7.0.0/16,10.9.0.4,0.0.0.0/0,10.9.0.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := slices.Clone(tt.routes)
			if got := routeOptions("10.9.0", tt.gateway, routes); !slices.Equal(got, tt.want) {
				t.Errorf("routeOptions(gateway=%v, %q) = %q, want %q", tt.gateway, tt.routes, got, tt.want)
			}
			if !slices.Equal(routes, tt.routes) {
				t.Errorf("routeOptions changed the site's routes to %q", routes)
			}
		})
	}
}
