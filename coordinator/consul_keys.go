package coordinator

import "strings"

// keys names the Consul keys under one prefix (see doc.go).
type keys struct {
	prefix string
}

func (k keys) leader() string              { return k.prefix + "/leader" }
func (k keys) members() string             { return k.prefix + "/members/" }
func (k keys) member(id string) string     { return k.members() + id }
func (k keys) assignments() string         { return k.prefix + "/assignments/" }
func (k keys) folder(member string) string { return k.assignments() + member + "/" }
func (k keys) assignment(member, account string) string {
	return k.folder(member) + account
}

// parseAssignment splits an assignment key into member and account; the
// account is empty for a member's folder marker. ok is false for a key
// that is neither.
func (k keys) parseAssignment(key string) (member, account string, ok bool) {
	rest, found := strings.CutPrefix(key, k.assignments())
	if !found {
		return "", "", false
	}
	member, account, found = strings.Cut(rest, "/")
	if !found || member == "" || strings.Contains(account, "/") {
		return "", "", false
	}
	return member, account, true
}

// parseAssignments reads a listing of assignment keys.
func (k keys) parseAssignments(list []string) assignments {
	out := assignments{}
	for _, key := range list {
		if m, a, ok := k.parseAssignment(key); ok {
			out.add(m, a)
		}
	}
	return out
}
