// Package builtin registers the connectors of real controllers that wimd
// ships (dynpac, tapi, ietfl2vpn, l2nm, onos, l3nm, ietfl3vpn): the one list of them, used by
// wimd and by the tests. The development types fake and failing are
// registered apart, only when asked for.
package builtin

import (
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/dynpac"
	"github.com/wimro/wimro/connectors/ietfl2vpn"
	"github.com/wimro/wimro/connectors/ietfl3vpn"
	"github.com/wimro/wimro/connectors/l2nm"
	"github.com/wimro/wimro/connectors/l3nm"
	"github.com/wimro/wimro/connectors/onos"
	"github.com/wimro/wimro/connectors/tapi"
)

// Register adds every controller connector to r.
func Register(r *connectors.Registry) {
	dynpac.Register(r)
	tapi.Register(r)
	ietfl2vpn.Register(r)
	l2nm.Register(r)
	onos.Register(r)
	l3nm.Register(r)
	ietfl3vpn.Register(r)
}
