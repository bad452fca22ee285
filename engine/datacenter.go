package engine

import (
	"context"
	"fmt"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// DatacenterInput is the body of a datacenter create or edit. On edit, nil
// fields keep their value and config is merged (null removes a key).
type DatacenterInput struct {
	Name        *string        `json:"name"`
	Description *string        `json:"description"`
	Type        *string        `json:"type"`
	VimURL      *string        `json:"vim_url"`
	VimURLAdmin *string        `json:"vim_url_admin"`
	Config      map[string]any `json:"config"`
}

func (in DatacenterInput) apply(d *wimro.Datacenter) error {
	if in.Name != nil {
		d.Name = *in.Name
	}
	if in.Description != nil {
		d.Description = in.Description
	}
	if in.Type != nil {
		d.Type = *in.Type
	}
	if in.VimURL != nil {
		d.VimURL = cleanURL(*in.VimURL)
	}
	if in.VimURLAdmin != nil {
		u := cleanURL(*in.VimURLAdmin)
		d.VimURLAdmin = &u
	}
	if in.Config != nil {
		d.Config = mergeConfig(d.Config, in.Config)
	}
	if err := checkName("datacenter.name", d.Name, 255); err != nil {
		return err
	}
	if err := checkDescription("datacenter.description", d.Description); err != nil {
		return err
	}
	if d.Type == "" {
		d.Type = "openvim"
	}
	if err := checkURL("datacenter.vim_url", d.VimURL); err != nil {
		return err
	}
	if _, _, _, err := netSource(d.Config); err != nil {
		return err
	}
	return checkExternalConnections(d.Config)
}

// checkExternalConnections validates the WAN exit rules: a list of
// {condition: {key: value}, vim_external_port: {switch, port}}.
func checkExternalConnections(config map[string]any) error {
	raw, ok := config["external_connections"]
	if !ok {
		return nil
	}
	rules, ok := raw.([]any)
	if !ok {
		return wimro.FieldErrorf("datacenter.config.external_connections", "datacenter.config.external_connections must be a list of rules")
	}
	for i, r := range rules {
		field := fmt.Sprintf("datacenter.config.external_connections[%d]", i)
		rule, ok := r.(map[string]any)
		if !ok {
			return wimro.FieldErrorf(field, "%s must be an object with condition and vim_external_port", field)
		}
		if c, ok := rule["condition"]; ok && c != nil {
			if _, ok := c.(map[string]any); !ok {
				return wimro.FieldErrorf(field+".condition", "%s.condition must be an object", field)
			}
		}
		if p, ok := rule["vim_external_port"]; ok && p != nil {
			port, ok := p.(map[string]any)
			if !ok || port["switch"] == nil || port["port"] == nil {
				return wimro.FieldErrorf(field+".vim_external_port", "%s.vim_external_port must have switch and port", field)
			}
		}
	}
	return nil
}

// CreateDatacenter registers a datacenter.
func (e *Engine) CreateDatacenter(ctx context.Context, in DatacenterInput) (wimro.Datacenter, error) {
	var d wimro.Datacenter
	if err := in.apply(&d); err != nil {
		return d, err
	}
	return e.db.CreateDatacenter(ctx, d)
}

// GetDatacenter finds a datacenter by name or uuid; with a tenant (not
// "any") it must be attached to that tenant.
func (e *Engine) GetDatacenter(ctx context.Context, tenantRef, ref string) (wimro.Datacenter, error) {
	t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
	if err != nil {
		return wimro.Datacenter{}, err
	}
	return e.db.GetDatacenter(ctx, ref, tenantID(t))
}

// ListDatacenters lists the datacenters of a tenant, or all with "any".
func (e *Engine) ListDatacenters(ctx context.Context, tenantRef string) ([]wimro.Datacenter, error) {
	t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
	if err != nil {
		return nil, err
	}
	return e.db.ListDatacenters(ctx, tenantID(t))
}

// UpdateDatacenter edits a datacenter; nil fields keep their value.
func (e *Engine) UpdateDatacenter(ctx context.Context, ref string, in DatacenterInput) (wimro.Datacenter, error) {
	var out wimro.Datacenter
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		d, err := s.GetDatacenter(ctx, ref, "")
		if err != nil {
			return err
		}
		if err := in.apply(&d); err != nil {
			return err
		}
		if out, err = s.UpdateDatacenter(ctx, d); err != nil {
			return err
		}
		// Workers cache datacenters (their exit rules): tell them.
		return s.NotifyAllAccounts(ctx)
	})
	return out, err
}

// DeleteDatacenter deletes a datacenter and its port mappings. Networks of
// NS instances in it make it a conflict.
func (e *Engine) DeleteDatacenter(ctx context.Context, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		d, err := s.GetDatacenter(ctx, ref, "")
		if err != nil {
			return err
		}
		if err := s.DeleteDatacenter(ctx, d.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("datacenter %s %s deleted", d.UUID, d.Name)
		// Workers keep the port mappings in memory: tell them.
		return s.NotifyAllAccounts(ctx)
	})
	return msg, err
}

// AttachDatacenter attaches a datacenter to a tenant.
func (e *Engine) AttachDatacenter(ctx context.Context, tenantRef, ref string) (wimro.Datacenter, error) {
	var out wimro.Datacenter
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		d, err := s.GetDatacenter(ctx, ref, "")
		if err != nil {
			return err
		}
		if err := s.AttachDatacenter(ctx, t.UUID, d.UUID); err != nil {
			if wimro.ErrorCode(err) == wimro.ECONFLICT {
				return wimro.Errorf(wimro.ECONFLICT, "Datacenter `%s` is already attached to tenant `%s`", d.UUID, t.UUID)
			}
			return err
		}
		out = d
		return nil
	})
	return out, err
}

// EditVIMTenant is openmano's edit of a tenant's VIM credentials on a
// datacenter (datacenter-edit-vim-tenant). wimro keeps no VIM
// credentials, so the edit changes nothing: it answers the datacenter
// once it is sure the datacenter is attached to the tenant.
func (e *Engine) EditVIMTenant(ctx context.Context, tenantRef, ref string) (wimro.Datacenter, error) {
	t, err := e.db.GetTenant(ctx, tenantRef)
	if err != nil {
		return wimro.Datacenter{}, err
	}
	return e.db.GetDatacenter(ctx, ref, t.UUID)
}

// DetachDatacenter detaches a datacenter from a tenant.
func (e *Engine) DetachDatacenter(ctx context.Context, tenantRef, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		d, err := s.GetDatacenter(ctx, ref, "")
		if err != nil {
			return err
		}
		if err := s.DetachDatacenter(ctx, t.UUID, d.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("datacenter %s detached from tenant %s", d.UUID, t.UUID)
		return nil
	})
	return msg, err
}

func tenantID(t *wimro.Tenant) string {
	if t == nil {
		return ""
	}
	return t.UUID
}
