package ietfl3vpn

import (
	"fmt"
	"testing"

	"github.com/wimro/wimro"
)

// TestBearerVLAN: a bearer-reference read back names its mapping's
// template and the VLAN that made it, and nothing else.
func TestBearerVLAN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		template, bearer string
		vlan             int
		ok               bool
	}{
		{"pe1:ge-0/0/1.{vlan}", "pe1:ge-0/0/1.100", 100, true},
		{"pe1:ge-0/0/1.{vlan}", "pe1:ge-0/0/1.", 0, false},
		{"pe1:ge-0/0/1.{vlan}", "pe1:ge-0/0/1.4095", 0, false},
		{"pe1:ge-0/0/1.{vlan}", "pe1:ge-0/0/2.100", 0, false},
		{"pe1:ge-0/0/1.{vlan}", "pe1:ge-0/0/1.100x", 0, false},
		{"vl{vlan}-on-{vlan}", "vl7-on-7", 7, true},
		{"vl{vlan}-on-{vlan}", "vl7-on-8", 0, false},
		{"pe1:ge-0/0/1", "pe1:ge-0/0/1", 0, true},
		{"pe1:ge-0/0/1", "pe1:ge-0/0/2", 0, false},
		{"", "", 0, true},
	}
	for _, tt := range tests {
		if vlan, ok := bearerVLAN(tt.template, tt.bearer); vlan != tt.vlan || ok != tt.ok {
			t.Errorf("bearerVLAN(%q, %q) = %d, %v; want %d, %v", tt.template, tt.bearer, vlan, ok, tt.vlan, tt.ok)
		}
	}
}

// TestMatch: an access names one port mapping by device, location and
// bearer; none, or two that differ, leave it unnamed.
func TestMatch(t *testing.T) {
	t.Parallel()
	mapping := func(device, location, bearer string) wimro.PortMapping {
		info := map[string]any{"device-id": device, "bearer-reference": bearer}
		if location != "" {
			info["location-id"] = location
		}
		return wimro.PortMapping{WANServiceMappingInfo: info}
	}
	mappings := []wimro.PortMapping{
		mapping("pe1", "", "pe1:ge-0/0/1.{vlan}"),
		mapping("pe2", "dc-b", "pe2:ge-0/0/1.{vlan}"),
		mapping("pe3", "", "pe3:x{vlan}"), mapping("pe3", "", "pe3:x1{vlan}"),
	}
	tests := []struct {
		device, location, bearer string
		want                     string
	}{
		{"pe1", "pe1", "pe1:ge-0/0/1.300", "pe1|pe1|pe1:ge-0/0/1.{vlan} 300"},
		{"pe2", "dc-b", "pe2:ge-0/0/1.5", "pe2|dc-b|pe2:ge-0/0/1.{vlan} 5"},
		{"pe2", "pe2", "pe2:ge-0/0/1.5", " 0"},   // another location
		{"pe9", "pe9", "pe1:ge-0/0/1.300", " 0"}, // another device
		{"pe3", "pe3", "pe3:x12", " 0"},          // both templates match
	}
	for _, tt := range tests {
		p, vlan := match(mappings, tt.device, tt.location, tt.bearer)
		if got := fmt.Sprint(p, " ", vlan); got != tt.want {
			t.Errorf("match(%s, %s, %s) = %q, want %q", tt.device, tt.location, tt.bearer, got, tt.want)
		}
	}
}
