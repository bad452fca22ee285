package wimro

import "time"

// Instance is an NS instance as the NFVO describes it to wimro
// (instance_scenarios row).
type Instance struct {
	UUID         string    `json:"uuid" db:"uuid"`
	Name         string    `json:"name" db:"name"`
	TenantID     string    `json:"tenant_id" db:"tenant_id"`
	ScenarioID   *string   `json:"scenario_id" db:"scenario_id"`
	DatacenterID *string   `json:"datacenter_id" db:"datacenter_id"`
	Description  *string   `json:"description" db:"description"`
	CreatedAt    time.Time `json:"created_at" db:"created_at"`
	ModifiedAt   time.Time `json:"modified_at" db:"modified_at"`
}

// Local network statuses (instance_nets.status). A CREATE waits while a
// network is pending and fails when one is broken.
const (
	NetActive            = "ACTIVE"
	NetInactive          = "INACTIVE"
	NetDown              = "DOWN"
	NetBuild             = "BUILD"
	NetError             = "ERROR"
	NetVIMError          = "VIM_ERROR"
	NetDeleted           = "DELETED"
	NetScheduledCreation = "SCHEDULED_CREATION"
	NetScheduledDeletion = "SCHEDULED_DELETION"
)

// NetStatuses lists the valid instance network statuses.
var NetStatuses = []string{NetActive, NetInactive, NetDown, NetBuild, NetError, NetVIMError, NetDeleted, NetScheduledCreation, NetScheduledDeletion}

// InstanceNet is one local network of an instance in one datacenter. The
// NFVO reports its status and encapsulation, and where it leaves the
// datacenter: PopSwitchDPID/Port, or VimInfo matched against the
// datacenter's external_connections rules.
type InstanceNet struct {
	UUID              string         `json:"uuid" db:"uuid"`
	InstanceID        string         `json:"instance_scenario_id" db:"instance_scenario_id"`
	SceNetID          *string        `json:"sce_net_id" db:"sce_net_id"`
	OsmID             *string        `json:"osm_id" db:"osm_id"`
	VimNetID          *string        `json:"vim_net_id" db:"vim_net_id"`
	VimName           *string        `json:"vim_name" db:"vim_name"`
	DatacenterID      string         `json:"datacenter_id" db:"datacenter_id"`
	Status            string         `json:"status" db:"status"`
	ErrorMsg          *string        `json:"error_msg" db:"error_msg"`
	VimInfo           map[string]any `json:"vim_info" db:"vim_info"`
	EncapsulationType *string        `json:"encapsulation_type" db:"encapsulation_type"`
	EncapsulationID   *int           `json:"encapsulation_id" db:"encapsulation_id"`
	PopSwitchDPID     *string        `json:"pop_switch_dpid" db:"pop_switch_dpid"`
	PopSwitchPort     *string        `json:"pop_switch_port" db:"pop_switch_port"`
	SdnNetID          *string        `json:"sdn_net_id" db:"sdn_net_id"`
	Related           *string        `json:"related" db:"related"`
	// L3 is the site of a layer-3 VPN the network asks in its datacenter
	// (connectors.L3Site's JSON: prefix, pe_address, ce_address,
	// static_routes, bgp), checked when the instance was written; nil for
	// layer 2.
	L3         map[string]any `json:"l3,omitempty" db:"l3"`
	CreatedAt  time.Time      `json:"created_at" db:"created_at"`
	ModifiedAt time.Time      `json:"modified_at" db:"modified_at"`
}

// WAN link statuses (instance_wim_nets.status).
const (
	LinkActive   = "ACTIVE"
	LinkInactive = "INACTIVE"
	LinkDown     = "DOWN"
	LinkBuild    = "BUILD"
	LinkError    = "ERROR"
	LinkWIMError = "WIM_ERROR"
	LinkDeleted  = "DELETED"
)

// WANLink is one WAN connectivity service for one (instance, sce_net)
// pair (instance_wim_nets row).
type WANLink struct {
	UUID          string         `json:"uuid" db:"uuid"`
	WIMInternalID *string        `json:"wim_internal_id" db:"wim_internal_id"`
	InstanceID    *string        `json:"instance_scenario_id" db:"instance_scenario_id"`
	SceNetID      *string        `json:"sce_net_id" db:"sce_net_id"`
	WIMID         *string        `json:"wim_id" db:"wim_id"`
	WIMAccountID  string         `json:"wim_account_id" db:"wim_account_id"`
	Status        string         `json:"status" db:"status"`
	ErrorMsg      *string        `json:"error_msg" db:"error_msg"`
	WIMInfo       map[string]any `json:"wim_info" db:"wim_info"`
	Multipoint    bool           `json:"multipoint" db:"multipoint"`
	// ServiceType is what the link is made as (ELINE, ELAN, L3VPN), chosen
	// with its WIM; empty on links written before wimro recorded it, whose
	// type follows from their points (ELAN when multipoint or over more
	// than two datacenters).
	ServiceType string  `json:"service_type,omitempty" db:"service_type"`
	Created     bool    `json:"created" db:"created"`
	Related     *string `json:"related" db:"related"`
	// BandwidthMbps and LatencyMs are the QoS the VLD asks (nil: none).
	BandwidthMbps *int `json:"bandwidth,omitempty" db:"bandwidth_mbps"`
	LatencyMs     *int `json:"latency,omitempty" db:"latency_ms"`
	// StatusSince is when Status last changed (monitoring shows how long
	// a link has been DOWN).
	StatusSince time.Time `json:"status_since" db:"status_since"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time `json:"modified_at" db:"modified_at"`
}

// ServiceKeyOf is the key the controller's service of link l was made
// with: the link's uuid, or, once an EDIT replaced the service by one of a
// new key, that key (wim_info "service_key"). Drift reconcile and a
// DELETE that must find the service by its key read it from here.
func ServiceKeyOf(l WANLink) string {
	if k, ok := l.WIMInfo["service_key"].(string); ok && k != "" {
		return k
	}
	return l.UUID
}

// InstanceAction groups the tasks of one user operation and counts their
// progress. It is complete when Done+Failed >= Tasks.
type InstanceAction struct {
	UUID        string    `json:"uuid" db:"uuid"`
	TenantID    string    `json:"tenant_id" db:"tenant_id"`
	InstanceID  *string   `json:"instance_id" db:"instance_id"`
	Description string    `json:"description" db:"description"`
	Tasks       int       `json:"number_tasks" db:"number_tasks"`
	Done        int       `json:"number_done" db:"number_done"`
	Failed      int       `json:"number_failed" db:"number_failed"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time `json:"modified_at" db:"modified_at"`
}

// Action kinds and statuses (vim_wim_actions).
const (
	ActionCreate = "CREATE"
	ActionDelete = "DELETE"
	// ActionEdit brings a link's service in line with the link's state
	// (points, QoS) after a change the NFVO reported: in place where the
	// connector edits, else by a replace (actions/doc.go).
	ActionEdit = "EDIT"

	ActionScheduled  = "SCHEDULED"
	ActionBuild      = "BUILD"
	ActionDone       = "DONE"
	ActionFailed     = "FAILED"
	ActionSuperseded = "SUPERSEDED"
	ActionFinished   = "FINISHED"
	// ActionCancelled and ActionAbandoned end an action by an operator's
	// decision, never by a run (see ActionOverride).
	ActionCancelled = "CANCELLED"
	ActionAbandoned = "ABANDONED"

	// ItemWANLink is the only item wimro's actions work on.
	ItemWANLink = "instance_wim_nets"
)

// Action is one task of an instance action: a CREATE or DELETE of a
// WAN link, run by the process that holds its account's lease.
type Action struct {
	InstanceActionID string         `json:"instance_action_id" db:"instance_action_id"`
	TaskIndex        int            `json:"task_index" db:"task_index"`
	Seq              int64          `json:"-" db:"seq"`
	WIMAccountID     *string        `json:"wim_account_id" db:"wim_account_id"`
	WIMInternalID    *string        `json:"wim_internal_id" db:"wim_internal_id"`
	Action           string         `json:"action" db:"action"`
	Item             string         `json:"item" db:"item"`
	ItemID           string         `json:"item_id" db:"item_id"`
	Status           string         `json:"status" db:"status"`
	Extra            map[string]any `json:"extra" db:"extra"`
	ErrorMsg         *string        `json:"error_msg" db:"error_msg"`
	Attempts         int            `json:"attempts" db:"attempts"`
	// UnsettledRuns counts the claims of the action whose outcome never
	// landed (a process stopped or died mid-run, a claim given up): each
	// may have reached the controller uncounted by Attempts, so an
	// operator's cancel refuses the action while it is not 0.
	UnsettledRuns  int        `json:"-" db:"unsettled_runs"`
	RunAfter       time.Time  `json:"run_after" db:"run_after"`
	ClaimedBy      *string    `json:"claimed_by" db:"claimed_by"`
	ClaimExpiresAt *time.Time `json:"claim_expires_at" db:"claim_expires_at"`
	CreatedAt      time.Time  `json:"created_at" db:"created_at"`
	ModifiedAt     time.Time  `json:"modified_at" db:"modified_at"`
}
