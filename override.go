package wimro

import "time"

// Operator overrides of an unfinished action (ActionOverride.Kind).
const (
	// OverrideCancel ends a SCHEDULED action that never reached its
	// controller: it becomes CANCELLED and nothing is left behind.
	OverrideCancel = "cancel"
	// OverrideAbandon gives up a DELETE, with force: it becomes
	// ABANDONED and its service, which may still be on the controller, is
	// recorded as an abandoned leftover that drift reconcile lists.
	OverrideAbandon = "abandon"
)

// ActionOverride is the audit record of one cancel or abandon: who, when,
// why and what. It outlives the action, its instance, its account and its
// WIM, so an abandoned service stays known after its WIM is deleted.
type ActionOverride struct {
	ID               int64  `json:"id" db:"id"`
	Kind             string `json:"kind" db:"kind"`
	InstanceActionID string `json:"instance_action_id" db:"instance_action_id"`
	TaskIndex        int    `json:"task_index" db:"task_index"`
	// Action is the task's kind (CREATE, DELETE); WANLinkID its link, the
	// key of the link's service on the controller.
	Action     string  `json:"action" db:"action"`
	WANLinkID  string  `json:"wan_link_id" db:"wan_link_id"`
	TenantID   *string `json:"tenant_id" db:"tenant_id"`
	InstanceID *string `json:"instance_id" db:"instance_id"`
	// Where the service is: the WIM and account as they were, and the
	// controller's id of the service when one was recorded.
	WIMID          *string `json:"wim_id" db:"wim_id"`
	WIMName        *string `json:"wim_name" db:"wim_name"`
	WIMType        *string `json:"wim_type" db:"wim_type"`
	WIMURL         *string `json:"wim_url" db:"wim_url"`
	WIMAccountID   *string `json:"wim_account_id" db:"wim_account_id"`
	WIMAccountName *string `json:"wim_account_name" db:"wim_account_name"`
	ServiceID      *string `json:"service_id" db:"service_id"`
	// Actor is who asked: the API token's identity, else "operator".
	Actor  string    `json:"actor" db:"actor"`
	Reason string    `json:"reason" db:"reason"`
	At     time.Time `json:"at" db:"at"`
}
