package coordinator

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"
)

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

// shardsFolder is member's folder of the sharded layout. Its name ends in
// '#', which no instance id contains: a leader of the per-account layout
// takes it for the folder of a member that is gone and deletes it.
func (k keys) shardsFolder(member string) string {
	return k.assignments() + member + shardsSuffix + "/"
}
func (k keys) shard(member, shard string) string { return k.shardsFolder(member) + shard }

// Assignment layouts (see doc.go, "Consul keys"): a member says in its
// membership record which one it reads.
const (
	// layoutPerAccount is one empty key per account, the only layout of
	// the processes before the sharded one; their membership record names
	// no layout.
	layoutPerAccount = 0
	// layoutShards is one value per member and shard of the account
	// space, listing the member's accounts of that shard.
	layoutShards = 2
)

const (
	shardsSuffix = "#shards"
	// shardCount is how many values the account space is split into: a
	// member's assignment is at most that many keys, and one account
	// moving rewrites one value of about 1/shardCount of the member's
	// accounts.
	shardCount = 256
	// maxShardBytes bounds one value (Consul refuses more than 512 KiB)
	// and a transaction's values (Consul refuses a request body over
	// 512 KiB, the values base64-encoded in it).
	maxShardBytes = 256 << 10
)

// shardOf names the shard of an account: two hex digits of a hash of its
// id (any string, not only a UUID).
func shardOf(account string) string {
	h := fnv.New32a()
	h.Write([]byte(account))
	return fmt.Sprintf("%02x", h.Sum32()%shardCount)
}

// shardValues splits accounts into shard values: the sorted ids of each
// shard, one per line. A value over maxShardBytes is an error: the member
// has more accounts than the layout holds (about 1.8 million).
func shardValues(accounts map[string]bool) (map[string][]byte, error) {
	groups := map[string][]string{}
	for a := range accounts {
		s := shardOf(a)
		groups[s] = append(groups[s], a)
	}
	out := make(map[string][]byte, len(groups))
	for s, ids := range groups {
		slices.Sort(ids)
		v := []byte(strings.Join(ids, "\n"))
		if len(v) > maxShardBytes {
			return nil, fmt.Errorf("assignment shard %s holds %d accounts (%d bytes), over the %d bytes of one Consul value",
				s, len(ids), len(v), maxShardBytes)
		}
		out[s] = v
	}
	return out, nil
}

// stored is what the assignment keys hold, in both layouts.
type stored struct {
	perAccount assignments
	shards     assignments
	// values holds, for each member, its shards' values as stored.
	values map[string]map[string][]byte
}

// parseStored reads a listing (with values) of the assignment keys.
// Keys that are neither layout's are ignored.
func (k keys) parseStored(pairs api.KVPairs) stored {
	s := stored{perAccount: assignments{}, shards: assignments{}, values: map[string]map[string][]byte{}}
	for _, p := range pairs {
		rest, found := strings.CutPrefix(p.Key, k.assignments())
		if !found {
			continue
		}
		folder, name, found := strings.Cut(rest, "/")
		if !found || folder == "" || strings.Contains(name, "/") {
			continue
		}
		member, sharded := strings.CutSuffix(folder, shardsSuffix)
		if !sharded {
			s.perAccount.add(member, name)
			continue
		}
		if member == "" {
			continue
		}
		if name == "" {
			s.shards.add(member, "")
			continue
		}
		if s.values[member] == nil {
			s.values[member] = map[string][]byte{}
		}
		s.values[member][name] = p.Value
		for _, a := range strings.Split(string(p.Value), "\n") {
			if a != "" {
				s.shards.add(member, a)
			}
		}
		if s.shards[member] == nil {
			s.shards[member] = &memberAssignment{accounts: map[string]bool{}}
		}
	}
	return s
}

// applied is what each member applies: its per-account folder when its
// marker is there (written by a leader of that layout, the newest word
// while it exists: a leader of the sharded layout deletes it once the
// member's shards are written), else its shards.
func (s stored) applied() assignments {
	out := assignments{}
	for m, a := range s.perAccount {
		if a.marker {
			out[m] = a
		}
	}
	for m, a := range s.shards {
		if out[m] == nil {
			out[m] = a
		}
	}
	return out
}

// members lists every member with a folder of either layout.
func (s stored) members() []string {
	all := map[string]bool{}
	for m := range s.perAccount {
		all[m] = true
	}
	for m := range s.shards {
		all[m] = true
	}
	return sortedSet(all)
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

// parseAssignments reads a listing of assignment keys of the per-account
// layout.
func (k keys) parseAssignments(list []string) assignments {
	out := assignments{}
	for _, key := range list {
		if m, a, ok := k.parseAssignment(key); ok {
			out.add(m, a)
		}
	}
	return out
}
