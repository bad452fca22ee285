package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// FindCommonWIMs returns the WIMs, attached to the tenant, whose port
// mappings reach every one of datacenterIDs (datacenters attached to the
// tenant). Oldest WIM first, then by uuid, so the choice is stable.
func (e *Engine) FindCommonWIMs(ctx context.Context, tenantID string, datacenterIDs []string) ([]wimro.WIM, error) {
	return e.db.FindCommonWIMs(ctx, datacenterIDs, tenantID)
}

// FindCommonWIM returns the first of FindCommonWIMs, or a not-found error
// naming the datacenters.
func (e *Engine) FindCommonWIM(ctx context.Context, tenantID string, datacenterIDs []string) (wimro.WIM, error) {
	return findCommonWIM(ctx, &e.db.Store, tenantID, datacenterIDs)
}

func findCommonWIM(ctx context.Context, s *persistence.Store, tenantID string, datacenterIDs []string) (wimro.WIM, error) {
	ws, err := s.FindCommonWIMs(ctx, datacenterIDs, tenantID)
	if err != nil {
		return wimro.WIM{}, err
	}
	if len(ws) == 0 {
		return wimro.WIM{}, wimro.Errorf(wimro.ENOTFOUND,
			"No WIM that is able to connect the given datacenters was found: `[%s]`", strings.Join(datacenterIDs, ", "))
	}
	return ws[0], nil
}

// FindSuitableAccount returns the account that attaches the common WIM of
// the datacenters to the tenant.
func (e *Engine) FindSuitableAccount(ctx context.Context, tenantID string, datacenterIDs []string) (wimro.WIMAccount, error) {
	return findSuitableAccount(ctx, &e.db.Store, tenantID, datacenterIDs)
}

func findSuitableAccount(ctx context.Context, s *persistence.Store, tenantID string, datacenterIDs []string) (wimro.WIMAccount, error) {
	w, err := findCommonWIM(ctx, s, tenantID, datacenterIDs)
	if err != nil {
		return wimro.WIMAccount{}, err
	}
	att, err := s.ListAttachedAccounts(ctx, w.UUID, tenantID)
	if err != nil {
		return wimro.WIMAccount{}, err
	}
	if len(att) != 1 {
		return wimro.WIMAccount{}, fmt.Errorf("engine: WIM %s has %d accounts for tenant %s", w.UUID, len(att), tenantID)
	}
	return att[0].Account, nil
}
