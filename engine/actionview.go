package engine

import (
	"context"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// InstanceActionView is an instance action, with its tasks when one action
// is asked for.
type InstanceActionView struct {
	wimro.InstanceAction
	WIMActions []wimro.Action `json:"vim_wim_actions,omitempty"`
	// VimActions repeats Tasks under openmano's older name.
	VimActions []wimro.Action `json:"vim_actions,omitempty"`
}

// AnyInstance is the instance path segment of the action routes that
// means every instance of the tenant (openmano's action-list without an
// instance).
const AnyInstance = "any"

// ListInstanceActions lists the actions of an instance (the instance may
// be deleted already: its actions outlive it); instanceID "any" lists the
// actions of every instance of the tenant, and of every tenant with
// tenant "any" too.
func (e *Engine) ListInstanceActions(ctx context.Context, tenantRef, instanceID string) ([]wimro.InstanceAction, error) {
	if instanceID == AnyInstance {
		t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
		if err != nil {
			return nil, err
		}
		return e.db.ListTenantActions(ctx, tenantID(t))
	}
	t, err := e.db.GetTenant(ctx, tenantRef)
	if err != nil {
		return nil, err
	}
	id, exists, err := resolveInstance(ctx, &e.db.Store, t, instanceID)
	if err != nil {
		return nil, err
	}
	list, err := e.db.ListInstanceActions(ctx, id)
	if err != nil {
		return nil, err
	}
	// The instance may be gone (its actions outlive it), so the id alone
	// proves nothing: keep only the tenant's own actions.
	own := list[:0]
	for _, ia := range list {
		if ia.TenantID == t.UUID {
			own = append(own, ia)
		}
	}
	if len(own) == 0 && !exists {
		// Neither the tenant's instance nor any of its history: the same
		// answer whether the id is unknown or another tenant's.
		return nil, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: instances - `uuid=%s`", instanceID)
	}
	return own, nil
}

// GetInstanceAction returns one instance action with its tasks and
// progress counters.
// The counters and the tasks are read in one snapshot: read apart, an
// outcome committed between them showed every task DONE beside a counter
// that had not counted the last one.
func (e *Engine) GetInstanceAction(ctx context.Context, tenantRef, instanceID, actionID string) (InstanceActionView, error) {
	var view InstanceActionView
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		ia, err := e.instanceAction(ctx, s, tenantRef, instanceID, actionID)
		if err != nil {
			return err
		}
		tasks, err := s.ListActionsOfInstanceAction(ctx, ia.UUID)
		if err != nil {
			return err
		}
		if tasks == nil {
			tasks = []wimro.Action{}
		}
		view = InstanceActionView{InstanceAction: ia, WIMActions: tasks, VimActions: tasks}
		return nil
	})
	return view, err
}

// instanceAction reads an instance action of an instance of the tenant:
// not found, whether unknown or another tenant's.
func (e *Engine) instanceAction(ctx context.Context, s *persistence.Store, tenantRef, instanceID, actionID string) (wimro.InstanceAction, error) {
	if instanceID == AnyInstance {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return wimro.InstanceAction{}, err
		}
		ia, err := s.GetInstanceAction(ctx, "", actionID)
		if err == nil && t != nil && ia.TenantID != t.UUID {
			err = wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: instance_actions - `uuid=%s`", actionID)
		}
		return ia, err
	}
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return wimro.InstanceAction{}, err
	}
	id, _, err := resolveInstance(ctx, s, t, instanceID)
	if err != nil {
		return wimro.InstanceAction{}, err
	}
	ia, err := s.GetInstanceAction(ctx, id, actionID)
	if err != nil {
		return wimro.InstanceAction{}, err
	}
	if ia.TenantID != t.UUID {
		return wimro.InstanceAction{}, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: instance_actions - `uuid=%s`", actionID)
	}
	return ia, nil
}

// resolveInstance resolves an instance of the tenant, and says whether it
// exists; a uuid of a deleted instance is accepted so its DELETE action
// stays visible.
func resolveInstance(ctx context.Context, s *persistence.Store, t wimro.Tenant, ref string) (id string, exists bool, err error) {
	inst, err := s.GetInstance(ctx, t.UUID, ref)
	if err == nil {
		return inst.UUID, true, nil
	}
	if id, ok := wimro.ParseUUID(ref); ok && wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return id, false, nil
	}
	return "", false, err
}
