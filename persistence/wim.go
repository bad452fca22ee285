package persistence

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/wimro/wimro"
)

const wimCols = `w.uuid, w.name, w.description, w.type, w.wim_url, w.config, w.created_at, w.modified_at`

// CreateWIM inserts w; an empty UUID gets a new one.
func (s *Store) CreateWIM(ctx context.Context, w wimro.WIM) (wimro.WIM, error) {
	return getOne[wimro.WIM](ctx, s, "wims", "name="+w.Name,
		`INSERT INTO wims AS w (uuid, name, description, type, wim_url, config)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+wimCols,
		newUUID(w.UUID), w.Name, w.Description, w.Type, w.URL, w.Config)
}

// GetWIM finds a WIM by name or uuid.
func (s *Store) GetWIM(ctx context.Context, nameOrUUID string) (wimro.WIM, error) {
	col, v, crit, err := ref("wims", nameOrUUID)
	if err != nil {
		return wimro.WIM{}, err
	}
	return getOne[wimro.WIM](ctx, s, "wims", crit, `SELECT `+wimCols+` FROM wims w WHERE w.`+col+` = $1`, v)
}

// GetWIMForUpdate reads a WIM by uuid and locks its row until the
// transaction ends, so read-modify-write edits do not lose updates.
func (s *Store) GetWIMForUpdate(ctx context.Context, id string) (wimro.WIM, error) {
	return getOne[wimro.WIM](ctx, s, "wims", "uuid="+id, `SELECT `+wimCols+` FROM wims w WHERE w.uuid = $1 FOR UPDATE`, id)
}

// wimListColumns is the whitelist of filterable columns: the only column
// names that ever reach SQL from a client's query string.
var wimListColumns = map[string]string{
	"uuid":       "w.uuid::text",
	"name":       "w.name",
	"wim_url":    "w.wim_url",
	"type":       "w.type",
	"created_at": "w.created_at",
}

// WIMListColumns returns the keys ListWIMs accepts in WIMFilter.Equal.
func WIMListColumns() []string {
	keys := make([]string, 0, len(wimListColumns))
	for k := range wimListColumns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WIMFilter restricts ListWIMs.
type WIMFilter struct {
	// TenantID, when set, keeps the WIMs attached to that tenant.
	TenantID string
	// Equal maps a column of WIMListColumns to a value; nil means IS NULL.
	Equal map[string]*string
	// Limit caps the result; 0 means 100.
	Limit int
}

// ListWIMs lists WIMs ordered by name.
func (s *Store) ListWIMs(ctx context.Context, f WIMFilter) ([]wimro.WIM, error) {
	var (
		where []string
		args  []any
	)
	from := `wims w`
	if f.TenantID != "" {
		from += ` JOIN wim_nfvo_tenants wt ON wt.wim_id = w.uuid`
		args = append(args, f.TenantID)
		where = append(where, fmt.Sprintf("wt.nfvo_tenant_id = $%d", len(args)))
	}
	keys := make([]string, 0, len(f.Equal))
	for k := range f.Equal {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		expr, ok := wimListColumns[k]
		if !ok {
			return nil, wimro.FieldErrorf(k, "Invalid query string at '%s'", k)
		}
		v := f.Equal[k]
		if v == nil {
			where = append(where, expr+" IS NULL")
			continue
		}
		args = append(args, *v)
		if k == "created_at" {
			where = append(where, fmt.Sprintf("%s = $%d::timestamptz", expr, len(args)))
		} else {
			where = append(where, fmt.Sprintf("%s = $%d", expr, len(args)))
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	sql := `SELECT ` + wimCols + ` FROM ` + from
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(` ORDER BY w.name LIMIT $%d`, len(args))
	return getAll[wimro.WIM](ctx, s, "wims", sql, args...)
}

// UpdateWIM writes the editable fields of w over the row with w.UUID.
func (s *Store) UpdateWIM(ctx context.Context, w wimro.WIM) (wimro.WIM, error) {
	return getOne[wimro.WIM](ctx, s, "wims", "uuid="+w.UUID,
		`UPDATE wims AS w SET name = $2, description = $3, type = $4, wim_url = $5, config = $6
		 WHERE w.uuid = $1 RETURNING `+wimCols,
		w.UUID, w.Name, w.Description, w.Type, w.URL, w.Config)
}

// DeleteWIM deletes a WIM; its accounts, associations and port mappings go
// with it, and the finished actions of its accounts stay as history,
// detached from them. WAN links that use the WIM or its accounts, or
// unfinished actions of its accounts, make it a conflict (see
// DeleteAccount). Run it inside DB.Tx.
func (s *Store) DeleteWIM(ctx context.Context, id string) error {
	if err := s.detachFinishedActions(ctx, `SELECT w.uuid FROM wim_accounts w WHERE w.wim_id = $1`, id); err != nil {
		return err
	}
	n, err := s.exec(ctx, "wims", `DELETE FROM wims WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("wims", "uuid="+id)
	}
	return nil
}

// FindCommonWIMs returns the WIMs that have port mappings in every one of
// datacenterIDs, counting only WIMs and datacenters attached to tenantID.
// The order is deterministic: oldest WIM first, then by uuid.
func (s *Store) FindCommonWIMs(ctx context.Context, datacenterIDs []string, tenantID string) ([]wimro.WIM, error) {
	ids := dedupe(datacenterIDs)
	if len(ids) == 0 { // every WIM of the tenant reaches all of none
		return getAll[wimro.WIM](ctx, s, "wims", `SELECT `+wimCols+` FROM wims w
			WHERE EXISTS (SELECT 1 FROM wim_nfvo_tenants wt WHERE wt.wim_id = w.uuid AND wt.nfvo_tenant_id = $1)
			ORDER BY w.created_at, w.uuid`, tenantID)
	}
	return getAll[wimro.WIM](ctx, s, "wims", commonWIMsSQL, ids, tenantID)
}

// commonWIMsSQL starts from the port mappings of the datacenters $1 (the
// tenant $2's), so it reads those, not every WIM of the tenant: it
// counted each WIM's mappings in turn, 300-800 us a lookup with 100 WIMs,
// and the engine looks one up for every link it plans.
const commonWIMsSQL = `
	SELECT ` + wimCols + ` FROM wims w
	WHERE w.uuid IN (
			SELECT pm.wim_id FROM wim_port_mappings pm
			JOIN tenants_datacenters td ON td.datacenter_id = pm.datacenter_id AND td.nfvo_tenant_id = $2
			WHERE pm.datacenter_id = ANY($1::uuid[])
			GROUP BY pm.wim_id
			HAVING count(DISTINCT pm.datacenter_id) = cardinality($1::uuid[]))
	  AND EXISTS (SELECT 1 FROM wim_nfvo_tenants wt WHERE wt.wim_id = w.uuid AND wt.nfvo_tenant_id = $2)
	ORDER BY w.created_at, w.uuid`

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
