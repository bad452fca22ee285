package wimro

import (
	"regexp"
	"strings"
	"time"
)

// Tenant is an NFVO tenant (openmano's nfvo_tenants row): the unit of
// multi-tenancy and the <tenant_id> segment of API paths.
type Tenant struct {
	UUID        string    `json:"uuid" db:"uuid"`
	Name        string    `json:"name" db:"name"`
	Description *string   `json:"description" db:"description"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time `json:"modified_at" db:"modified_at"`
}

// Datacenter is a VIM endpoint as the NFVO knows it. Config carries
// external_connections: the rules that say where a local network leaves the
// datacenter towards the WAN.
type Datacenter struct {
	UUID        string         `json:"uuid" db:"uuid"`
	Name        string         `json:"name" db:"name"`
	Description *string        `json:"description" db:"description"`
	Type        string         `json:"type" db:"type"`
	VimURL      string         `json:"vim_url" db:"vim_url"`
	VimURLAdmin *string        `json:"vim_url_admin" db:"vim_url_admin"`
	Config      map[string]any `json:"config" db:"config"`
	CreatedAt   time.Time      `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time      `json:"modified_at" db:"modified_at"`
}

// WIM is a WAN controller endpoint; Type selects the connector.
type WIM struct {
	UUID        string         `json:"uuid" db:"uuid"`
	Name        string         `json:"name" db:"name"`
	Description *string        `json:"description" db:"description"`
	Type        string         `json:"type" db:"type"`
	URL         string         `json:"wim_url" db:"wim_url"`
	Config      map[string]any `json:"config" db:"config"`
	CreatedAt   time.Time      `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time      `json:"modified_at" db:"modified_at"`
}

// WIMAccount holds the credentials and connector settings used to talk to
// one WIM. One process at a time runs an account's actions: the holder of
// its lease. Password is the sealed (encrypted) secret as stored; it never
// leaves the process in clear text.
type WIMAccount struct {
	UUID       string         `json:"uuid" db:"uuid"`
	Name       *string        `json:"name" db:"name"`
	WIMID      string         `json:"wim_id" db:"wim_id"`
	Created    bool           `json:"created" db:"created"`
	User       *string        `json:"user" db:"username"`
	Password   []byte         `json:"-" db:"password"`
	Config     map[string]any `json:"config" db:"config"`
	CreatedAt  time.Time      `json:"created_at" db:"created_at"`
	ModifiedAt time.Time      `json:"modified_at" db:"modified_at"`
	// Status is the result of the last credentials check (AccountActive,
	// AccountError with StatusMsg, AccountUnknown before the first).
	Status    string     `json:"status" db:"status"`
	StatusMsg *string    `json:"status_msg" db:"status_msg"`
	CheckedAt *time.Time `json:"checked_at" db:"checked_at"`
}

// Account statuses: the result of the connector's CheckCredentials.
const (
	AccountUnknown = "UNKNOWN"
	AccountActive  = "ACTIVE"
	AccountError   = "ERROR"
)

// WIMTenantAssociation attaches a tenant to a WIM through one account
// (wim_nfvo_tenants row).
type WIMTenantAssociation struct {
	ID           int64     `json:"id" db:"id"`
	TenantID     string    `json:"nfvo_tenant_id" db:"nfvo_tenant_id"`
	WIMID        string    `json:"wim_id" db:"wim_id"`
	WIMAccountID string    `json:"wim_account_id" db:"wim_account_id"`
	CreatedAt    time.Time `json:"created_at" db:"created_at"`
	ModifiedAt   time.Time `json:"modified_at" db:"modified_at"`
}

// PortMapping says that a datacenter's PoP switch port is wired to a WAN
// service endpoint of a WIM.
type PortMapping struct {
	ID                    int64          `json:"-" db:"id"`
	WIMID                 string         `json:"wim_id" db:"wim_id"`
	DatacenterID          string         `json:"datacenter_id" db:"datacenter_id"`
	PopSwitchDPID         string         `json:"pop_switch_dpid" db:"pop_switch_dpid"`
	PopSwitchPort         string         `json:"pop_switch_port" db:"pop_switch_port"`
	WANServiceEndpointID  string         `json:"wan_service_endpoint_id" db:"wan_service_endpoint_id"`
	WANServiceMappingInfo map[string]any `json:"wan_service_mapping_info" db:"wan_service_mapping_info"`
	CreatedAt             time.Time      `json:"created_at" db:"created_at"`
	ModifiedAt            time.Time      `json:"modified_at" db:"modified_at"`
}

var (
	uuidDashed = regexp.MustCompile(`^[a-fA-F0-9]{8}(-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}$`)
	uuidPlain  = regexp.MustCompile(`^[a-fA-F0-9]{32}$`)
)

// ParseUUID reports whether s is a uuid by openmano's rule (dashed, or 32
// hex digits) and returns it in canonical lower-case dashed form. A value
// that is not a uuid is a name.
func ParseUUID(s string) (string, bool) {
	switch {
	case uuidDashed.MatchString(s):
		return strings.ToLower(s), true
	case uuidPlain.MatchString(s):
		s = strings.ToLower(s)
		return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:], true
	}
	return "", false
}
