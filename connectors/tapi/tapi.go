// Package tapi provides WIM type "tapi": a connector for ONF Transport API
// connectivity services over RESTCONF, TAPI 2.1.3 (ONOS ODTN, most 2.1.x
// servers, OSM's connector and mock) and 2.4.1 (TransportPCE). Every body
// it sends is in the shape of the version in use, and is checked in its
// tests with yanglint against ONF's published modules of that version
// (testdata/yang):
//
//	GET    {root}/data/tapi-common:context/service-interface-point
//	POST   {root}/data/tapi-common:context/tapi-connectivity:connectivity-context
//	         {"tapi-connectivity:connectivity-service": [{…}]}          (create, "data")
//	POST   {root}/operations/tapi-connectivity:create-connectivity-service
//	         {"tapi-connectivity:input": {…}}                             (create, "rpc")
//	GET    {root}/data/…/connectivity-context/connectivity-service[=<uuid>]
//	POST   {root}/operations/tapi-connectivity:delete-connectivity-service
//	DELETE {root}/data/…/connectivity-context/connectivity-service=<uuid>
//
// Bodies are RFC 7951 JSON sent as application/yang-data+json; error
// replies' ietf-restconf:errors end up in the error text.
//
// # RESTCONF root and version
//
// {root} is the WIM URL when its path ends in /restconf or /rests;
// otherwise the root that the server's /.well-known/host-meta names (its
// "restconf" link: RESTCONF's discovery), else {url}/restconf.
// OpenDaylight-based servers (TransportPCE) serve /rests. Both are asked
// once per connector.
//
// The version is the setting tapi_version; "auto" (the default) reads
// the server's ietf-yang-library (modules-state, else yang-library) once:
// a tapi-connectivity revision from 2021 on is 2.4.1, an earlier one
// 2.1.3; a server that lists none is taken as 2.1.3. The shapes:
//
//	2.1.3 data   {uuid, name, end-point, service-type, requested-capacity,
//	             connectivity-direction}
//	2.1.3 rpc    {end-point (each named, see Idempotency),
//	             connectivity-constraint: {service-type, requested-capacity,
//	             connectivity-direction}}: no uuid, no name
//	2.4.1 data   {uuid, name, layer-protocol-name, direction, end-point,
//	             connectivity-constraint: {service-type, requested-capacity}}
//	2.4.1 rpc    {uuid, name, layer-protocol-name, end-point,
//	             connectivity-constraint: {…}}: no direction
//
// In 2.4.1 capacity units are identities (tapi-common:CAPACITY_UNIT_GBPS),
// end-point and SIP directions SOURCE (2.1's INPUT) and SINK (OUTPUT), and
// a SIP lists its qualifiers in supported-cep-layer-protocol-qualifier-
// instances; replies of either version are read.
//
// # Service
//
// An ELINE between two SIPs is one BIDIRECTIONAL,
// POINT_TO_POINT_CONNECTIVITY service; an ELINE between two photonic
// pairs is two UNIDIRECTIONAL ones (see Photonic pairs). An ELAN becomes
// MULTIPOINT_CONNECTIVITY only when the setting multipoint is true
// (whether a controller can realise it is implementation-specific);
// otherwise it is refused. requested-capacity is capacity_value
// capacity_unit (1 GBPS, as OSM), the value a string (uint64 in RFC 7951);
// a create's bandwidth (connectors.QoS, Mbit/s) replaces it with
// value/MBPS, and adopting a service whose requested-capacity differs is
// then Permanent (a configured capacity is not compared: servers may
// rewrite it, and it is no promise made to the NFVO). A photonic pair refuses a bandwidth (a media channel's
// capacity is its spectrum, not a rate). Latency is not honoured: wimro
// writes no TAPI latency characteristic.
// Each end-point carries local-id (the service endpoint id, suffixed with
// ".<vlan>" when one endpoint appears twice), the SIP uuid, and the SIP's
// layer-protocol-name and first supported layer-protocol-qualifier (OSM's
// choice). Before a create the SIP list is read: an unknown SIP, a
// unidirectional (INPUT/OUTPUT) SIP for a bidirectional service, or a
// photonic pair whose SIPs are not INPUT and OUTPUT, is a Permanent error
// and nothing is created.
//
// # VLANs and port mappings
//
// TAPI (2.1.3 and 2.4.1) has no VLAN leaf on a connectivity-service end-point, so a VLAN
// is expressed by the SIP: controllers expose one SIP per port and VLAN.
// A point's MappingInfo (the port mapping's wan_service_mapping_info, or,
// when the point carries none, cfg.PortMappings' entry for its endpoint;
// neither is a Permanent error naming the endpoint) says which SIP to use:
//
//	"sips": {"100": "<sip>", "101": "<sip>"}  SIP per VLAN (dot1q points)
//	"sip": "<sip>"                            the untagged SIP; with
//	"vlan": 100                               the VLAN that "sip" carries (dot1q)
//
//	"sip_input": "<sip>",                     a photonic port (OSM's keys):
//	"sip_output": "<sip>"                     its INPUT and its OUTPUT SIP,
//	                                          both or neither
//
// A dot1q point takes sips[VLAN], else "sip" when "vlan" equals its VLAN,
// else it is refused (Permanent): the tag is never dropped silently, and
// photonic ports carry no VLAN, so a dot1q point is never given a
// photonic pair. An untagged point takes "sip" when it carries no "vlan",
// else the photonic pair; a mapping with only "sips" has no untagged SIP
// and is refused; a mapping with none of these keys uses the endpoint id
// as the SIP, as OSM does.
//
// # Photonic pairs
//
// An ELINE whose two points resolve to photonic pairs (OSM's
// unidirectional photonic ports) becomes two UNIDIRECTIONAL
// POINT_TO_POINT_CONNECTIVITY services, as in OSM: "az" carries traffic
// from the first point to the second, "za" back. A SIP's direction is
// that of the connectivity service's port at it, so a half goes in at its
// source's sip_input SIP (end-point direction INPUT; SOURCE in 2.4.1) and out at its
// sink's sip_output SIP (direction OUTPUT; SINK), both end-points with role
// SYMMETRIC (point to point); direction and role are only sent on these
// halves. On the wire these are OSM's two services, with az and za
// swapped: OSM lists the OUTPUT end-point first, calls the service that
// leaves at the first point's OUTPUT SIP "az" and sends no direction or
// role (its mock names INPUT SIPs "-rx" and OUTPUT SIPs "-tx", from the
// client port's side). Only an ELINE with a photonic pair at both ends
// can be expressed: a pair facing a bidirectional SIP (OSM refuses it as
// incongruent directionality) or an ELAN with a pair is refused
// (Permanent) before anything is sent.
//
// Each half is named with the service key and {"value-name":
// "wimro-direction", "value": "az" or "za"}. With create_mode "data" their
// uuids are PairUUIDs(key): UUIDv5s, under the namespace of ServiceUUID,
// of ServiceUUID(key)+"/az" and +"/za", their last four hex digits set to
// OSM's suffixes 00af and 00fa. Each half is created or adopted like a
// bidirectional service (see Idempotency), az first. When za fails, az is
// deleted again (even when adopted: no id reaches the caller to delete it
// later), unless ctx is done: the call was interrupted, and its retry
// adopts az.
//
// The service id of a pair is "<az uuid>,<za uuid>", so that the id alone
// finds both halves (nil connInfo is fine). connInfo is OSM's shape plus
// wimro's keys: {"bidirectional": false, "az": {"uuid", "sips": [its
// INPUT SIP, its OUTPUT SIP]}, "za": {…}, "service_key", "create_mode"}.
// GetServiceStatus and DeleteService also take an id without a comma
// along with such a connInfo (a pair OSM made: its "…00**" id and its
// conn_info). Delete deletes az, then za, each 404 being success.
// ListServices gives a bidirectional service's Endpoints by reading its
// SIPs back through the port mappings (nil when a SIP is named by none or
// by two, and for photonic pairs). It lists a pair once, under its id and key, with Info
// {"bidirectional": false, "az": {…}, "za": {…}}; a half whose partner
// is gone is listed alone, its id with the other side empty ("<az uuid>,"
// or ",<za uuid>"), which status and delete take too, so ClearAll deletes
// halves as well.
//
// # Idempotency
//
// The service uuid is derived from the key: the key itself when it is a
// UUID (wimro's keys are WAN link uuids), else a UUIDv5 of it under a fixed
// namespace. Every service is also named {"value-name": "wimro-service-key",
// "value": key}: ListServices and ClearAll only touch services so named
// (never other tenants'), and it lets create adopt when the server chose the
// uuid. TAPI 2.1.3's create RPC has no name, so there each end-point
// carries the name entries (an end-point has a name list) and a service
// whose end-points all carry the key is taken as named with it.
//
// With create_mode "data" (default, as OSM) the POST carries the derived
// uuid; a retry gets 409 (error-tag data-exists, or resource-denied as
// RFC 8040 words it), and the connector reads the service and adopts it
// when it has the same SIPs (else Permanent). With create_mode "rpc" the
// server picks the uuid (2.1.3; 2.4.1's input carries the derived uuid,
// which the server may honour, a 409 then adopting as above), so the
// connector lists the services first, under a lock per key
// (connectors.Config.MutationLock), and adopts the one named with the key
// (a photonic half: with the key and its direction), which also covers a
// create whose reply was lost. What remains: two creates of one key at
// the same time in processes that share no Locker, or a server that lists
// a new service only some time after creating it, can make a second
// service; and with create_mode "data" a key that was created as a
// bidirectional service and then as a photonic pair (or the reverse) gets
// both, as their uuids differ.
//
// EditService is not supported (Permanent): TAPI's
// update-connectivity-service RPC is not used by OSM and its support
// varies, and delete-then-create under the same uuid could lose the
// service half-way.
//
// Delete uses delete_mode: "rpc" (default: the version's input,
// {"service-id-or-name": …} on 2.1.3, {"uuid": …} on 2.4.1), "rpc-uuid"
// or "rpc-service-id-or-name" (that input whatever the version) or "data"
// (DELETE on the data node). 404 (or a data-missing error) is success; any
// other refusal but 401/403 (ONOS answers 417 and TransportPCE a failed
// RPC result for a service they do not have) is followed by a look-up of
// the service: gone is success, else the refusal is the error.
//
// # Status
//
// lifecycle-state PLANNED and POTENTIAL_* → BUILD; INSTALLED with
// operational-state ENABLED → ACTIVE, with DISABLED → DOWN; PENDING_REMOVAL
// → DOWN; anything else INACTIVE (ask again). Info carries the raw
// states. A service the controller does not have is a NotFound error; a 404
// on the entry is checked against the list first, for servers that only
// serve the list (OSM's mock).
//
// A photonic pair's status is the AND of its halves' (each read as
// above; OSM ANDs them too): ACTIVE when both are; else ERROR, then DOWN,
// when a half is (a half the controller does not have counts as ERROR);
// else BUILD. Message names the halves that are not ACTIVE, and Info is
// {"bidirectional": false, "az": {…}, "za": {…}}. A pair neither of whose
// halves exists is NotFound.
//
// CheckCredentials reads the SIP list, then checks that every SIP named by
// cfg.PortMappings exists ("SIP not found: …", Permanent) and that each
// photonic pair's sip_input is an INPUT SIP and its sip_output an OUTPUT
// SIP (Permanent).
//
// Settings (account config, then WIM config), besides connectors/rest's
// timeout_ms, ca_file, insecure_skip_verify and bearer_token:
//
//	tapi_version    "auto" (default), "2.1.3" or "2.4.1"
//	create_mode     "data" (default) or "rpc"
//	delete_mode     "rpc" (default), "rpc-uuid", "rpc-service-id-or-name" or "data"
//	capacity_value  requested capacity, a positive integer (1)
//	capacity_unit   its unit: GBPS (default), MBPS, KBPS, TBPS, GB, MB, KB, TB, GHz, MHz
//	multipoint      allow ELAN as MULTIPOINT_CONNECTIVITY (false)
package tapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// Type is the WIM type this package registers.
const Type = "tapi"

// Register adds the tapi connector to r under Type.
func Register(r *connectors.Registry) { r.Register(Type, Factory, Capabilities) }

// Capabilities are tapi's: ELINE, and ELAN (MULTIPOINT_CONNECTIVITY)
// where the setting multipoint is true; a bandwidth (requested-capacity);
// no edit, so an EDIT action replaces the service, making the new
// connectivity service before it deletes the old (a TAPI context holds
// two services on one SIP: each is its own uuid); a list of the services
// it named.
var Capabilities = connectors.Capabilities{
	Services:        []connectors.ServiceType{connectors.ServiceELINE, connectors.ServiceELAN},
	QoS:             []connectors.QoSField{connectors.QoSBandwidth},
	List:            true,
	MakeBeforeBreak: true,
	Narrow: func(cfg connectors.Config) connectors.Capabilities {
		c := connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE},
			QoS: []connectors.QoSField{connectors.QoSBandwidth}, List: true, MakeBeforeBreak: true}
		if m, err := cfg.BoolSetting("multipoint", false); err == nil && m {
			c.Services = append(c.Services, connectors.ServiceELAN)
		}
		return c
	},
}

// Values of the create_mode, delete_mode and tapi_version settings.
const (
	CreateData        = "data"
	CreateRPC         = "rpc"
	DeleteRPC         = "rpc" // the version's input leaf
	DeleteRPCUUID     = "rpc-uuid"
	DeleteRPCIDOrName = "rpc-service-id-or-name"
	DeleteData        = "data"
	VersionAuto       = "auto"
	Version213        = "2.1.3"
	Version241        = "2.4.1"
)

// KeyName is the value-name of the name entry that carries the service key
// on every service the connector creates.
const KeyName = "wimro-service-key"

const (
	directionBoth    = "BIDIRECTIONAL"
	typePointToPoint = "POINT_TO_POINT_CONNECTIVITY"
	typeMultipoint   = "MULTIPOINT_CONNECTIVITY"
	// Paths under the RESTCONF root.
	sipListPath         = "/data/tapi-common:context/service-interface-point"
	connectivityContext = "/data/tapi-common:context/tapi-connectivity:connectivity-context"
	servicesPath        = connectivityContext + "/connectivity-service"
	createRPCPath       = "/operations/tapi-connectivity:create-connectivity-service"
	deleteRPCPath       = "/operations/tapi-connectivity:delete-connectivity-service"
	modulesStatePath    = "/data/ietf-yang-library:modules-state"
	yangLibraryPath     = "/data/ietf-yang-library:yang-library"
)

// keyNamespace is the UUIDv5 namespace of service uuids derived from keys
// that are not UUIDs. Changing it would orphan existing services.
var keyNamespace = uuid.MustParse("62831c7d-8912-4a7e-843c-6a6fd6ae3a30")

// ServiceUUID returns the service uuid the connector uses for key: the key
// when it is a UUID, else a UUIDv5 of it.
func ServiceUUID(key string) string {
	if u, err := uuid.Parse(key); err == nil {
		return u.String()
	}
	return uuid.NewSHA1(keyNamespace, []byte(key)).String()
}

var capacityUnits = []string{"GBPS", "MBPS", "KBPS", "TBPS", "GB", "MB", "KB", "TB", "GHz", "MHz"}

type connector struct {
	rc         *rest.Client
	root       *rest.Root
	setVersion string // tapi_version: VersionAuto, Version213 or Version241
	lock       func(ctx context.Context, name string) (func(), error)
	lockPrefix string // names the create lock of a key on this controller
	createMode string
	deleteMode string
	capacity   capacity
	multipoint bool
	mappings   connectors.MappingIndex
	ordered    []string // endpoint ids of mappings, sorted
	// sipNames reads a listed service's SIPs back as endpoints
	// (connectors.EndpointName of the mapping and VLAN that name the SIP);
	// "" marks a SIP that two mappings name.
	sipNames map[string]string
	log      *slog.Logger

	mu      sync.Mutex
	version string // the version in use, once known
}

// Factory builds a tapi connector. It contacts nothing; invalid settings
// are Permanent errors naming the setting.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	rc, err := rest.New(Type, cfg)
	if err != nil {
		return nil, err
	}
	createMode, err := oneOf(cfg, "create_mode", CreateData, CreateRPC)
	if err != nil {
		return nil, err
	}
	deleteMode, err := oneOf(cfg, "delete_mode", DeleteRPC, DeleteRPCUUID, DeleteRPCIDOrName, DeleteData)
	if err != nil {
		return nil, err
	}
	version, err := oneOf(cfg, "tapi_version", VersionAuto, Version213, Version241)
	if err != nil {
		return nil, err
	}
	value, err := cfg.IntSetting("capacity_value", 1)
	if err != nil {
		return nil, err
	}
	if value <= 0 {
		return nil, connectors.Errorf(connectors.KindPermanent, "tapi: config \"capacity_value\" must be positive, got %d", value)
	}
	unit, err := oneOf(cfg, "capacity_unit", capacityUnits...)
	if err != nil {
		return nil, err
	}
	multipoint, err := cfg.BoolSetting("multipoint", false)
	if err != nil {
		return nil, err
	}
	c := &connector{
		rc:         rc,
		root:       rest.NewRoot(rc),
		setVersion: version,
		lock:       cfg.MutationLock,
		lockPrefix: "tapi " + rc.Controller() + " service key ",
		createMode: createMode,
		deleteMode: deleteMode,
		capacity:   capacity{TotalSize: totalSize{Value: strconv.Itoa(value), Unit: unit}},
		multipoint: multipoint,
		mappings:   cfg.Mappings(),
		log:        cfg.Log(),
	}
	for _, m := range cfg.PortMappings {
		c.ordered = append(c.ordered, m.WANServiceEndpointID)
	}
	slices.Sort(c.ordered)
	c.sipNames = sipNames(cfg.PortMappings)
	return c, nil
}

// sipNames maps each SIP the port mappings name to the endpoint it
// stands for, as endFor resolves a point: a per-VLAN SIP to its endpoint
// and VLAN, "sip" to its endpoint and "vlan", a photonic pair's SIPs to
// their endpoint, and, for a mapping naming no SIP, the endpoint id itself
// (OSM's rule). A mapping that does not parse names nothing.
func sipNames(mappings []wimro.PortMapping) map[string]string {
	out := map[string]string{}
	add := func(sip, name string) {
		if prev, ok := out[sip]; ok && prev != name {
			out[sip] = "" // two mappings: the listing cannot tell which
			return
		}
		out[sip] = name
	}
	for _, m := range mappings {
		pm, err := parseMapping(m.WANServiceMappingInfo)
		if err != nil {
			continue
		}
		id := m.WANServiceEndpointID
		for vlan, sip := range pm.sips {
			add(sip, connectors.EndpointName(id, vlan))
		}
		if pm.sip != "" {
			add(pm.sip, connectors.EndpointName(id, pm.sipVLAN))
		}
		if pm.sipInput != "" {
			add(pm.sipInput, connectors.EndpointName(id, 0))
			add(pm.sipOutput, connectors.EndpointName(id, 0))
		}
		if pm.sip == "" && pm.sips == nil && pm.sipInput == "" {
			add(id, connectors.EndpointName(id, 0))
		}
	}
	return out
}

// endpoints reads a service's SIPs back as endpoints; nil when one of them
// is named by no port mapping, or by two.
func (c *connector) endpoints(sips []string) []string {
	out := make([]string, 0, len(sips))
	for _, sip := range sips {
		name := c.sipNames[sip]
		if name == "" {
			return nil
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// oneOf reads a string setting that must be one of allowed (the first is
// the default).
func oneOf(cfg connectors.Config, key string, allowed ...string) (string, error) {
	v, err := cfg.StringSetting(key, allowed[0])
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, v) {
		return "", connectors.Errorf(connectors.KindPermanent, "tapi: config %q: want one of %s, got %q", key, strings.Join(allowed, ", "), v)
	}
	return v, nil
}

// fail is the classified error of a non-2xx reply, with the RESTCONF
// error text when the body has one.
func (c *connector) fail(op string, r rest.Reply) error {
	return c.rc.Error(op, r, rest.RESTCONFDetail(r.Body))
}

func (c *connector) get(ctx context.Context, op, path string) (rest.Reply, error) {
	return c.send(ctx, op, http.MethodGet, path, nil)
}

// send sends in (nil: no body) to path under the RESTCONF root.
func (c *connector) send(ctx context.Context, op, method, path string, in any) (rest.Reply, error) {
	root, err := c.root.Get(ctx, op)
	if err != nil {
		return rest.Reply{}, err
	}
	return c.rc.JSON(ctx, op, method, root+path, rest.MediaYANGJSON, in)
}

// tapiVersion returns the TAPI version in use: the tapi_version setting,
// else the one the server's yang library says (tapi-connectivity's
// revision: 2.4.1's from 2021 on, 2.1.x's before), else 2.1.3, whose
// shapes OSM's connector and most 2.1.x servers use.
func (c *connector) tapiVersion(ctx context.Context, op string) (string, error) {
	if c.setVersion != VersionAuto {
		return c.setVersion, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != "" {
		return c.version, nil
	}
	v := Version213
	for _, path := range []string{modulesStatePath, yangLibraryPath} {
		r, err := c.get(ctx, op+" (yang library)", path)
		if err != nil {
			return "", err
		}
		if r.Status >= 500 || r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			// Not an answer about the library: guessing the version
			// now could send bodies the server refuses.
			return "", c.fail(op+" (yang library)", r)
		}
		if rev, ok := tapiRevision(r); ok {
			if rev >= "2021" {
				v = Version241
			}
			break
		}
	}
	c.log.Debug("tapi version detected", "version", v)
	c.version = v
	return v, nil
}

// tapiRevision returns the revision of tapi-connectivity that a yang
// library answer (RFC 7895's modules-state or RFC 8525's yang-library)
// lists.
func tapiRevision(r rest.Reply) (string, bool) {
	if !r.OK() {
		return "", false
	}
	type module struct {
		Name     string `json:"name"`
		Revision string `json:"revision"`
	}
	var doc struct {
		ModulesState *struct {
			Module []module `json:"module"`
		} `json:"ietf-yang-library:modules-state"`
		YANGLibrary *struct {
			ModuleSet []struct {
				Module []module `json:"module"`
			} `json:"module-set"`
		} `json:"ietf-yang-library:yang-library"`
	}
	if json.Unmarshal(r.Body, &doc) != nil {
		return "", false
	}
	var mods []module
	if doc.ModulesState != nil {
		mods = doc.ModulesState.Module
	}
	if doc.YANGLibrary != nil {
		for _, s := range doc.YANGLibrary.ModuleSet {
			mods = append(mods, s.Module...)
		}
	}
	for _, m := range mods {
		if m.Name == "tapi-connectivity" && m.Revision != "" {
			return m.Revision, true
		}
	}
	return "", false
}

// sipList reads the controller's SIPs, by uuid.
func (c *connector) sipList(ctx context.Context, op string) (map[string]sip, error) {
	r, err := c.get(ctx, op, sipListPath)
	if err != nil {
		return nil, err
	}
	if r.Status == http.StatusNotFound {
		// No SIP list means no TAPI context at this URL: a configuration
		// problem, not a missing service.
		e := connectors.Errorf(connectors.KindPermanent, "tapi %s: GET %s: HTTP 404: no TAPI context at this URL", op, sipListPath)
		e.Status = r.Status
		return nil, e
	}
	if !r.OK() {
		return nil, c.fail(op, r)
	}
	var list []sip
	if _, err := c.member(op, r, "tapi-common", "service-interface-point", &list); err != nil {
		return nil, err
	}
	out := make(map[string]sip, len(list))
	for _, s := range list {
		s.normalize()
		out[s.UUID] = s
	}
	return out, nil
}

func (c *connector) CheckCredentials(ctx context.Context) error {
	sips, err := c.sipList(ctx, "check credentials")
	if err != nil {
		return err
	}
	var missing, wrong []string
	for _, ep := range c.ordered {
		m, err := parseMapping(c.mappings[ep])
		if err != nil {
			return connectors.Errorf(connectors.KindPermanent, "tapi check credentials: port mapping of %s: %s", ep, err)
		}
		for _, s := range m.named(ep) {
			if _, ok := sips[s]; !ok {
				missing = append(missing, fmt.Sprintf("%s (port mapping of %s)", s, ep))
			}
		}
		if m.sipInput == "" {
			continue
		}
		for _, d := range [][2]string{{m.sipInput, dirInput}, {m.sipOutput, dirOutput}} {
			if s, ok := sips[d[0]]; ok && s.Direction != d[1] {
				wrong = append(wrong, pairDirectionProblem(s, d[1], ep))
			}
		}
	}
	if len(missing) > 0 {
		return connectors.Errorf(connectors.KindPermanent, "tapi check credentials: SIP not found: %s", strings.Join(missing, ", "))
	}
	if len(wrong) > 0 {
		return connectors.Errorf(connectors.KindPermanent, "tapi check credentials: %s", strings.Join(wrong, "; "))
	}
	return nil
}

// CheckMapping implements connectors.MappingChecker: the SIP keys, when
// present, must be well formed (the SIPs themselves are checked against
// the controller by CheckCredentials).
func (c *connector) CheckMapping(endpointID string, info map[string]any) error {
	if _, err := parseMapping(info); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "tapi: the wan_service_mapping_info of service endpoint %q: %s", endpointID, err)
	}
	return nil
}

// plan checks the request and resolves each point to its SIP or photonic
// pair, without talking to the controller. It returns the service type
// and the ends, all bidirectional or all photonic.
func (c *connector) plan(t connectors.ServiceType, points []connectors.ConnectionPoint) (string, []end, error) {
	if err := connectors.ValidatePoints(t, points); err != nil {
		return "", nil, err
	}
	// ValidatePoints accepts every type wimro knows: an L3VPN would be
	// made a point-to-point service without this.
	if err := Capabilities.Check(Type, connectors.Request{Type: t}); err != nil {
		return "", nil, err
	}
	serviceType := typePointToPoint
	if t == connectors.ServiceELAN {
		if !c.multipoint {
			return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: ELAN (MULTIPOINT_CONNECTIVITY) is disabled; set config \"multipoint\" to true if the controller supports it")
		}
		serviceType = typeMultipoint
	}
	seen := make(map[string]int, len(points))
	for _, p := range points {
		seen[p.ServiceEndpointID]++
	}
	ends := make([]end, len(points))
	photonic := 0
	for i, p := range points {
		info, err := c.mappings.For(Type, i, p)
		if err != nil {
			return "", nil, err
		}
		m, err := parseMapping(info)
		if err == nil {
			ends[i], err = m.endFor(p)
		}
		if err != nil {
			return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: connection point %d (%s): wan_service_mapping_info: %s", i, p.ServiceEndpointID, err)
		}
		ends[i].localID = p.ServiceEndpointID
		if seen[p.ServiceEndpointID] > 1 {
			ends[i].localID += "." + strconv.Itoa(p.VLAN)
		}
		if ends[i].photonic() {
			photonic++
		}
	}
	switch {
	case photonic > 0 && t != connectors.ServiceELINE:
		return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: photonic pairs (sip_input/sip_output) only make an ELINE (two unidirectional services), not %s", t)
	case photonic > 0 && photonic < len(ends):
		return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: connection points %s and %s mix a photonic pair (sip_input/sip_output, unidirectional services) with a bidirectional SIP; both ends must be of one kind", ends[0].localID, ends[1].localID)
	}
	return serviceType, ends, nil
}

// describe completes the end-points of the services to create from the
// controller's SIP list. An end-point without direction belongs to a
// bidirectional service and needs a bidirectional SIP; one with a
// direction (a photonic half) needs a SIP of that direction.
func (c *connector) describe(ctx context.Context, services ...[]endPoint) error {
	sips, err := c.sipList(ctx, "create (SIP list)")
	if err != nil {
		return err
	}
	for _, eps := range services {
		for i := range eps {
			s, ok := sips[eps[i].SIP.UUID]
			switch {
			case !ok:
				return connectors.Errorf(connectors.KindPermanent, "tapi create: SIP not found: %s (end-point %s)", eps[i].SIP.UUID, eps[i].LocalID)
			case eps[i].Direction == "" && (s.Direction == dirInput || s.Direction == dirOutput):
				return connectors.Errorf(connectors.KindPermanent, "tapi create: SIP %s is unidirectional (%s); a bidirectional service needs a BIDIRECTIONAL SIP", s.UUID, s.Direction)
			case eps[i].Direction != "" && s.Direction != eps[i].Direction:
				return connectors.Errorf(connectors.KindPermanent, "tapi create: %s", pairDirectionProblem(s, eps[i].Direction, eps[i].LocalID))
			case s.LayerProtocolName == "":
				return connectors.Errorf(connectors.KindPermanent, "tapi create: SIP %s has no layer-protocol-name", s.UUID)
			}
			eps[i].LayerProtocolName = s.LayerProtocolName
			if len(s.Qualifiers) > 0 {
				eps[i].LayerProtocolQualifier = s.Qualifiers[0]
			}
		}
	}
	return nil
}

// CreateService implements connectors.Connector: q's bandwidth is the
// requested-capacity, in MBPS.
func (c *connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	key, t, points, q := req.Key, req.Type, req.Points, req.QoS
	if key == "" {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: a service key is required")
	}
	if q.LatencyMs != 0 {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: latency cannot be honoured: wimro writes no TAPI latency characteristic")
	}
	serviceType, ends, err := c.plan(t, points)
	if err != nil {
		return "", nil, err
	}
	requested := &c.capacity
	if q.BandwidthMbps != 0 {
		requested = &capacity{TotalSize: totalSize{Value: strconv.Itoa(q.BandwidthMbps), Unit: "MBPS"}}
	}
	if ends[0].photonic() {
		if q.BandwidthMbps != 0 {
			return "", nil, connectors.Errorf(connectors.KindPermanent, "tapi: bandwidth cannot be honoured between photonic end-points (a media channel's capacity is its spectrum)")
		}
		return c.createPair(ctx, key, ends[0], ends[1])
	}
	eps := make([]endPoint, len(ends))
	for i, e := range ends {
		eps[i] = endPoint{LocalID: e.localID, SIP: sipRef{UUID: e.sip}}
	}
	if err := c.describe(ctx, eps); err != nil {
		return "", nil, err
	}
	want := service{
		Name:                  []nameValue{{ValueName: KeyName, Value: key}},
		EndPoint:              eps,
		ConnectivityDirection: directionBoth,
		ServiceType:           serviceType,
		RequestedCapacity:     requested,
		capacityAsked:         q.BandwidthMbps != 0,
	}
	id, err := c.create(ctx, key, ServiceUUID(key), want)
	if err != nil {
		return "", nil, err
	}
	sips := make([]any, len(eps))
	for i, ep := range eps {
		sips[i] = ep.SIP.UUID
	}
	return id, map[string]any{"service_uuid": id, "service_key": key, "create_mode": c.createMode, "sips": sips}, nil
}

// create makes the service want, or adopts it, and returns its uuid:
// with create_mode "data" it is id, with "rpc" the server's choice.
// With "rpc" on 2.4.1 the input carries id too, which the server may
// honour.
func (c *connector) create(ctx context.Context, key, id string, want service) (string, error) {
	want.UUID = id
	if c.createMode == CreateRPC {
		return c.createRPC(ctx, key, want)
	}
	return c.createData(ctx, key, want)
}

// adoptable checks that an existing service is the one asked for: named
// with key (or not named by wimro at all) and on the same SIPs.
func adoptable(have, want service, key string) error {
	if k := have.key(); k != "" && k != key {
		return connectors.Errorf(connectors.KindPermanent, "tapi create: service %s exists with service key %q, not %q", have.UUID, k, key)
	}
	if h, w := have.sips(), want.sips(); !slices.Equal(h, w) {
		return connectors.Errorf(connectors.KindPermanent, "tapi create: service %s exists with other end-points (SIPs %s, want %s); delete it first", have.UUID, strings.Join(h, ", "), strings.Join(w, ", "))
	}
	if want.capacityAsked && !sameCapacity(have.RequestedCapacity, want.RequestedCapacity) {
		return connectors.Errorf(connectors.KindPermanent, "tapi create: service %s exists with requested-capacity %s, want %s; delete it first",
			have.UUID, have.RequestedCapacity, want.RequestedCapacity)
	}
	return nil
}

// rates are the capacity units that are rates, in bit/s.
var rates = map[string]float64{"KBPS": 1e3, "MBPS": 1e6, "GBPS": 1e9, "TBPS": 1e12}

// sameCapacity reports whether an existing service's requested-capacity
// is the one wanted: equal rates in any unit (1 GBPS is 1000 MBPS), else
// equal value and unit. A server that does not echo the capacity is
// taken at its word.
func sameCapacity(have, want *capacity) bool {
	if have == nil || want == nil {
		return true
	}
	hv, hok := have.number()
	wv, wok := want.number()
	if !hok || !wok {
		return fmt.Sprint(have.TotalSize.Value) == fmt.Sprint(want.TotalSize.Value) && have.TotalSize.Unit == want.TotalSize.Unit
	}
	hr, hRate := rates[have.TotalSize.Unit]
	wr, wRate := rates[want.TotalSize.Unit]
	if hRate && wRate {
		return hv*hr == wv*wr
	}
	return hv == wv && have.TotalSize.Unit == want.TotalSize.Unit
}

func (c *connector) createData(ctx context.Context, key string, want service) (string, error) {
	version, err := c.tapiVersion(ctx, "create")
	if err != nil {
		return "", err
	}
	body := map[string]any{"tapi-connectivity:connectivity-service": []any{want.body(version, false)}}
	r, err := c.send(ctx, "create", http.MethodPost, connectivityContext, body)
	if err != nil {
		return "", err
	}
	if r.OK() {
		c.log.Debug("tapi service created", "service_id", want.UUID, "service_key", key)
		return want.UUID, nil
	}
	if !exists(r) {
		return "", c.fail("create", r)
	}
	return c.adoptByUUID(ctx, key, want)
}

// exists reports a create refused because the service is there already:
// 409 with error-tag data-exists (OpenDaylight) or resource-denied (RFC
// 8040's tag for a POST of an existing resource), or a bare 409.
func exists(r rest.Reply) bool {
	return rest.HasRESTCONFTag(r.Body, "data-exists") ||
		r.Status == http.StatusConflict && (rest.HasRESTCONFTag(r.Body, "resource-denied") || len(rest.ParseRESTCONFErrors(r.Body)) == 0)
}

// adoptByUUID reads the service whose uuid a create found taken and
// adopts it when it is the one wanted.
func (c *connector) adoptByUUID(ctx context.Context, key string, want service) (string, error) {
	// The uuid is taken: most likely by our own earlier attempt.
	have, err := c.read(ctx, "create (read existing)", want.UUID)
	if connectors.IsNotFound(err) {
		// Deleted between the two requests: a retry can create it.
		return "", connectors.Errorf(connectors.KindRetryable, "tapi create: service %s existed a moment ago and is gone now: %w", want.UUID, err)
	}
	if err != nil {
		return "", err
	}
	if err := adoptable(have, want, key); err != nil {
		return "", err
	}
	c.log.Debug("tapi service adopted", "service_id", want.UUID, "service_key", key)
	return want.UUID, nil
}

func (c *connector) createRPC(ctx context.Context, key string, want service) (string, error) {
	unlock, err := c.lock(ctx, c.lockPrefix+key)
	if err != nil {
		return "", connectors.Errorf(connectors.KindOf(err), "tapi create: %w", err)
	}
	defer unlock()
	list, err := c.services(ctx, "create (look-up by key)")
	if err != nil {
		return "", err
	}
	for _, have := range list {
		// The other half of a photonic pair is not this one; any other
		// service named with the key must be this one.
		if have.key() != key || have.half() != "" && want.half() != "" && have.half() != want.half() {
			continue
		}
		if err := adoptable(have, want, key); err != nil {
			return "", err
		}
		c.log.Debug("tapi service adopted", "service_id", have.UUID, "service_key", key)
		return have.UUID, nil
	}
	version, err := c.tapiVersion(ctx, "create")
	if err != nil {
		return "", err
	}
	if version == Version213 {
		want.UUID = "" // 2.1.3's input has no uuid: the server picks it
	}
	r, err := c.send(ctx, "create", http.MethodPost, createRPCPath, map[string]any{"tapi-connectivity:input": want.body(version, true)})
	if err != nil {
		return "", err
	}
	if !r.OK() && want.UUID != "" && exists(r) {
		return c.adoptByUUID(ctx, key, want)
	}
	if !r.OK() {
		return "", c.fail("create", r)
	}
	var out struct {
		Service struct {
			UUID string `json:"uuid"`
		} `json:"service"`
	}
	if _, err := c.member("create", r, "tapi-connectivity", "output", &out); err != nil {
		return "", err
	}
	if out.Service.UUID == "" {
		// A retry will find the service by its name, if it was made.
		return "", connectors.Errorf(connectors.KindPermanent, "tapi create: the controller replied %d without output/service/uuid (%s)", r.Status, c.rc.Snippet(r.Body))
	}
	c.log.Debug("tapi service created", "service_id", out.Service.UUID, "service_key", key)
	return out.Service.UUID, nil
}

// read returns one service; a service the controller does not have is a
// NotFound error. A 404 on the entry is double-checked in the list, since
// some servers (OSM's mock among them) only serve the whole list.
func (c *connector) read(ctx context.Context, op, id string) (service, error) {
	r, err := c.get(ctx, op, servicesPath+"="+rest.EscapeKey(id))
	if err != nil {
		return service{}, err
	}
	if r.Status == http.StatusNotFound {
		list, lerr := c.services(ctx, op+" (list)")
		if lerr != nil {
			return service{}, lerr
		}
		if i := slices.IndexFunc(list, func(s service) bool { return s.UUID == id }); i >= 0 {
			return list[i], nil
		}
		return service{}, c.fail(op+" of "+id, r)
	}
	if !r.OK() {
		return service{}, c.fail(op+" of "+id, r)
	}
	list, err := c.serviceList(op, r)
	if err != nil {
		return service{}, err
	}
	if len(list) == 0 {
		return service{}, connectors.Errorf(connectors.KindNotFound, "tapi %s: the controller answered %d with no service %s", op, r.Status, id)
	}
	return list[0], nil
}

// services lists every connectivity service on the controller. RESTCONF
// servers answer 404 for an empty list.
func (c *connector) services(ctx context.Context, op string) ([]service, error) {
	r, err := c.get(ctx, op, servicesPath)
	if err != nil {
		return nil, err
	}
	if r.Status == http.StatusNotFound || r.Status == http.StatusNoContent {
		return nil, nil
	}
	if !r.OK() {
		return nil, c.fail(op, r)
	}
	return c.serviceList(op, r)
}

func (c *connector) GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (connectors.ServiceStatus, error) {
	if id == "" {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "tapi status: empty service id")
	}
	if az, za, ok := pairOf(id, connInfo); ok {
		return c.pairStatus(ctx, az, za)
	}
	s, err := c.read(ctx, "status", id)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	return status(s), nil
}

func (c *connector) EditService(ctx context.Context, id string, _ map[string]any, _ connectors.Request) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, connectors.Errorf(connectors.KindRetryable, "tapi edit: %w", err)
	}
	return nil, connectors.Errorf(connectors.KindPermanent, "tapi edit of %s: not supported (delete the WAN link and create it again)", id)
}

func (c *connector) DeleteService(ctx context.Context, id string, connInfo map[string]any) error {
	if id == "" {
		return nil
	}
	if az, za, ok := pairOf(id, connInfo); ok {
		return c.deletePair(ctx, az, za)
	}
	return c.deleteOne(ctx, id)
}

// deleteOne deletes one connectivity service; one that is gone is fine.
// A 404 or data-missing says so; any other refusal (ONOS answers 417,
// TransportPCE a failed RPC result, for a service it does not have) is
// checked by looking the service up: gone means deleted.
func (c *connector) deleteOne(ctx context.Context, id string) error {
	var r rest.Reply
	var err error
	mode := c.deleteMode
	if mode == DeleteRPC {
		version, err := c.tapiVersion(ctx, "delete")
		if err != nil {
			return err
		}
		mode = map[string]string{Version213: DeleteRPCIDOrName, Version241: DeleteRPCUUID}[version]
	}
	switch mode {
	case DeleteData:
		r, err = c.send(ctx, "delete", http.MethodDelete, servicesPath+"="+rest.EscapeKey(id), nil)
	case DeleteRPCIDOrName:
		r, err = c.send(ctx, "delete", http.MethodPost, deleteRPCPath, map[string]any{"tapi-connectivity:input": map[string]any{"service-id-or-name": id}})
	default:
		r, err = c.send(ctx, "delete", http.MethodPost, deleteRPCPath, map[string]any{"tapi-connectivity:input": map[string]any{"uuid": id}})
	}
	if err != nil {
		return err
	}
	if !r.OK() && r.Status != http.StatusNotFound && !rest.HasRESTCONFTag(r.Body, "data-missing") {
		refused := c.fail("delete of "+id, r)
		if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			return refused
		}
		_, rerr := c.read(ctx, "delete (look-up)", id)
		if !connectors.IsNotFound(rerr) {
			return refused
		}
		c.log.Debug("tapi delete refused, and the service is gone: deleted", "service_id", id, "status", r.Status)
		return nil
	}
	c.log.Debug("tapi service deleted", "service_id", id, "status", r.Status)
	return nil
}

func (c *connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	list, err := c.services(ctx, "list")
	if err != nil {
		return nil, err
	}
	var out []connectors.Service
	var halves []service
	for _, s := range list {
		key := s.key()
		switch {
		case key == "":
			continue // not wimro's
		case s.half() != "":
			halves = append(halves, s)
		default:
			out = append(out, connectors.Service{ID: s.UUID, Key: key, Info: s.info(), Endpoints: c.endpoints(s.sips())})
		}
	}
	out = append(out, pairs(halves)...)
	slices.SortFunc(out, func(a, b connectors.Service) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// ClearAll deletes every service named with a wimro service key.
func (c *connector) ClearAll(ctx context.Context) error {
	list, err := c.ListServices(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		if err := c.DeleteService(ctx, s.ID, nil); err != nil {
			return err
		}
	}
	return nil
}

var (
	_ connectors.Connector = (*connector)(nil)
)
