package onos

// IfaceName is ifaceName for the external tests: the interface name of
// point index of key on port and VLAN.
var IfaceName = ifaceName
