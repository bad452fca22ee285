package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wimro/wimro/internal/yamljson"
)

// osmMappingCommand prints the port-mapping file an OSM operator gives
// `osm wim-create --wim_type ietfl2vpn --wim_port_mapping FILE` when
// registering wimd as an IETF L2VPN WIM.
func osmMappingCommand() spec {
	return spec{name: "wim-port-mapping-osm", args: "[WIM]", complete: "wim",
		summary: "Print the port-mapping file OSM's ietfl2vpn plugin needs to reach the WIM through wimd's IETF L2VPN\n" +
			"northbound (osm wim-create --wim_type ietfl2vpn --wim_port_mapping FILE). WIM defaults to OPENMANO_WIM.",
		max: 1, setup: setupOSMMapping}
}

// osmMappingEntries derives OSM's entries from wimro's port mapping
// groups: one per mapping with a service endpoint, whose bearer-reference
// is that endpoint at its datacenter (the site), and whose top-level
// device-id (the plugin's edit requires one) is the PoP switch. A site is
// the datacenter's name unless the name would break the URL path the
// plugin writes it into unencoded: then its uuid. It also returns the
// mappings left out (no service endpoint), as words.
func osmMappingEntries(groups []any, names map[string]string) ([]any, []string) {
	var out []any
	var skipped []string
	for _, g := range groups {
		gm := asMap(g)
		id := str(gm["datacenter_id"])
		site := names[id]
		if site == "" || strings.ContainsAny(site, "/?#% ") {
			site = id
		}
		for _, m := range asList(gm["pop_wan_mappings"]) {
			mm := asMap(m)
			ep := str(mm["wan_service_endpoint_id"])
			if ep == "" {
				skipped = append(skipped, fmt.Sprintf("%s %s port %s", site, str(mm["pop_switch_dpid"]), str(mm["pop_switch_port"])))
				continue
			}
			out = append(out, map[string]any{
				"service_endpoint_id": ep,
				"service_mapping_info": map[string]any{
					"site-id": site,
					"bearer":  map[string]any{"bearer-reference": ep},
				},
				"device-id": str(mm["pop_switch_dpid"]),
			})
		}
	}
	return out, skipped
}

func setupOSMMapping(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, wim, err := s.tenantWIM(false, args)
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "GET", seg(t, "wims", wim, "port_mapping"), nil)
		if err != nil {
			return err
		}
		dcs, err := s.quiet(ctx, seg(t, "datacenters"))
		if err != nil {
			return err
		}
		names := map[string]string{}
		for _, d := range asList(asMap(dcs.doc)["datacenters"]) {
			m := asMap(d)
			names[str(m["uuid"])] = str(m["name"])
		}
		entries, skipped := osmMappingEntries(asList(asMap(r.doc)["wim_port_mapping"]), names)
		for _, sk := range skipped {
			fmt.Fprintf(s.c.Stderr, "left out (no wan_service_endpoint_id, which OSM's bearer-reference needs): %s\n", sk)
		}
		if len(entries) == 0 {
			return cliErrorf("WIM %s has no port mapping with a wan_service_endpoint_id at a datacenter of tenant %s", wim, t)
		}
		b, err := yamljson.MarshalYAML(entries)
		if err != nil {
			return err
		}
		_, err = s.c.Stdout.Write(b)
		return err
	}
}
